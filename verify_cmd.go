package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	uzap "go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// runVerify runs one step of the EtcdBackup controller's verification pod:
//
//	verify restore  the init container: restore the backup (S3 or a read-only claim) into
//	                the pod's emptyDir and write what the member must serve beside it
//	verify check    the check container: wait for the etcd container (loopback only) and
//	                compare its revision and key count with that expectation
//	verify snapshot the one container of a snapshot check pod (render.SnapshotCheckPod):
//	                download one object into the pod's emptyDir and check it as a
//	                member's restore step will (restore.CheckSnapshot), so that the
//	                operator never parses a tenant's snapshot in its own process
//
// Each writes a restore.VerifyResult as JSON to its termination message.
func runVerify(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: verify restore|check|snapshot [flags]")
		return 2
	}
	switch args[0] {
	case "restore":
		return runVerifyRestore(args[1:])
	case "check":
		return runVerifyCheck(args[1:])
	case "snapshot":
		return runVerifySnapshot(args[1:])
	}
	fmt.Fprintf(os.Stderr, "verify: unknown step %q (restore, check or snapshot)\n", args[0])
	return 2
}

func runVerifyRestore(args []string) int {
	fs := podFlagSet("verify restore")
	src := addBackupSourceFlags(fs, "backup directory (a read-only mounted claim) instead of S3", "verify the newest periodic backup <path>_v<rev>_<time> of the path")
	var (
		name       = fs.String("name", "verify", "member name")
		dataDir    = fs.String("data-dir", "", "data directory to create")
		peerURL    = fs.String("peer-url", "http://127.0.0.1:2380", "the member's peer URL")
		expectFile = fs.String("expect-file", "", "where to write what the member must serve")
		timeout    = fs.Duration("timeout", 10*time.Minute, "give up after this long")
		resultFile = fs.String("result-file", "/dev/termination-log", "where to write the JSON result")
	)
	if !parsePodFlags(os.Stderr, fs, args) {
		return 2
	}
	lg, _ := uzap.NewProduction()
	defer lg.Sync() //nolint:errcheck
	report := func(r restore.VerifyResult) int {
		writeResult(lg, *resultFile, r.Encode())
		if r.Reason != "" {
			lg.Error("verification restore failed", uzap.String("reason", r.Reason), uzap.String("error", r.Error))
			return 1
		}
		lg.Info("backup restored for verification", uzap.String("key", r.Key), uzap.Int64("revision", r.Revision))
		return 0
	}
	invalid := func(err error) int {
		return report(restore.VerifyResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: err.Error()})
	}
	if *dataDir == "" || *expectFile == "" {
		return invalid(errors.New("--data-dir and --expect-file are required"))
	}
	var (
		store  backup.Store
		objKey string
		err    error
	)
	switch fromS3, fromDir := src.given(); {
	case fromS3 && !fromDir:
		store, objKey, err = src.s3Store()
	case fromDir && !fromS3:
		store, objKey, err = src.fsStore()
	default:
		err = errors.New("give exactly one of --s3-path and --dir")
	}
	if errors.As(err, new(credentialsError)) {
		return report(restore.VerifyResult{Reason: etcdv1beta2.ReasonSecretError, Error: err.Error()})
	}
	if err != nil {
		return invalid(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return report(restore.RestoreForVerification(ctx, restore.Options{
		Store: store, Key: objKey, Latest: *src.latest, Revision: *src.backupRevision,
		Name: *name, DataDir: *dataDir, PeerURLs: []string{*peerURL},
		InitialCluster: *name + "=" + *peerURL, InitialClusterToken: *name, Log: lg,
	}, *expectFile))
}

func runVerifyCheck(args []string) int {
	fs := podFlagSet("verify check")
	var (
		endpoint   = fs.String("endpoint", "http://127.0.0.1:2379", "client URL of the restored member")
		expectFile = fs.String("expect-file", "", "what the member must serve, as the restore step wrote it")
		timeout    = fs.Duration("timeout", 2*time.Minute, "how long the member may take to serve")
		resultFile = fs.String("result-file", "/dev/termination-log", "where to write the JSON result")
	)
	if !parsePodFlags(os.Stderr, fs, args) {
		return 2
	}
	lg, _ := uzap.NewProduction()
	defer lg.Sync() //nolint:errcheck
	var r restore.VerifyResult
	if want, err := restore.ReadExpectation(*expectFile); err != nil {
		r = restore.VerifyResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: fmt.Sprintf("read the expectation: %v", err)}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		r = restore.CheckMember(ctx, *endpoint, want)
		cancel()
	}
	writeResult(lg, *resultFile, r.Encode())
	if r.Reason != "" {
		lg.Error("verification failed", uzap.String("reason", r.Reason), uzap.String("error", r.Error))
		return 1
	}
	lg.Info("backup verified", uzap.String("key", r.Key), uzap.Int64("revision", r.Revision), uzap.Int64("servedRevision", r.ServedRevision), uzap.Int64("keys", r.KeyCount))
	return 0
}

func runVerifySnapshot(args []string) int {
	fs := podFlagSet("verify snapshot")
	src := addBackupSourceFlags(fs, "backup directory (a read-only mounted claim) instead of S3", "check the newest periodic backup <path>_v<rev>_<time> of the path")
	var (
		dir        = fs.String("download-dir", "", "directory the object is downloaded into (removed after the check)")
		timeout    = fs.Duration("timeout", 10*time.Minute, "give up after this long")
		resultFile = fs.String("result-file", "/dev/termination-log", "where to write the JSON result")
		maxBytes   = fs.Int64("max-object-bytes", backup.DefaultMaxObjectBytes, "largest object read, stored or decompressed; decompression past 100x the stored bytes beyond 1 GiB is refused too (LimitExceeded)")
	)
	if !parsePodFlags(os.Stderr, fs, args) {
		return 2
	}
	// The operator's own bounds: a gzip bomb stops at the ratio instead of filling the
	// pod's scratch volume up to its limit.
	src.limits = backup.OperatorLimits(*maxBytes)
	lg, _ := uzap.NewProduction()
	defer lg.Sync() //nolint:errcheck
	report := func(r restore.VerifyResult) int {
		writeResult(lg, *resultFile, r.Encode())
		if r.Reason != "" {
			lg.Error("snapshot check failed", uzap.String("reason", r.Reason), uzap.String("error", r.Error))
			return 1
		}
		lg.Info("snapshot checked", uzap.String("key", r.Key), uzap.String("sha256", r.SHA256), uzap.Int64("revision", r.Revision))
		return 0
	}
	var (
		store  backup.Store
		objKey string
		err    error
	)
	switch fromS3, fromDir := src.given(); {
	case *dir == "":
		err = errors.New("--download-dir is required")
	case *src.latest:
		err = errors.New("a snapshot check is of one exact object: --latest is not accepted")
	case fromS3 && !fromDir:
		store, objKey, err = src.s3Store()
	case fromDir && !fromS3:
		store, objKey, err = src.fsStore()
	default:
		err = errors.New("give exactly one of --s3-path and --dir")
	}
	if errors.As(err, new(credentialsError)) {
		return report(restore.VerifyResult{Reason: etcdv1beta2.ReasonSecretError, Error: err.Error()})
	}
	if err != nil {
		return report(restore.VerifyResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: err.Error()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return report(restore.CheckSnapshot(ctx, store, objKey, *dir))
}

// writeResult writes a step's result to its termination message file. The kubelet
// creates that file before the container starts; where it does not exist (outside a
// pod) the result is only logged rather than creating a stray file in /dev.
func writeResult(lg *uzap.Logger, path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		lg.Warn("cannot write the result file", uzap.String("path", path), uzap.Error(err))
	}
}
