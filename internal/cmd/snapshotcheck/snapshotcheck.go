// Package snapshotcheck is the one container of a snapshot check pod
// (`<operator> verify snapshot [flags]`, render.SnapshotCheckPod; internal/snapshotcheck
// runs it): download one object into the pod's emptyDir and check it as a member's
// restore step will (restore.CheckSnapshot), so that the operator never parses a
// tenant's snapshot in its own process. It writes a restore.CheckResult as JSON to its
// termination message.
package snapshotcheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	uzap "go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// Subcommand and Step are the operator binary's arguments that run this program.
const (
	Subcommand = "verify"
	Step       = "snapshot"
)

// DefaultTimeout is --timeout's default.
const DefaultTimeout = 10 * time.Minute

// Options are the program's flags. A zero field is not rendered (its flag's default
// applies).
type Options struct {
	// Source is the one exact object (Latest is refused).
	Source inpod.Source
	// DownloadDir receives the object (removed after the check).
	DownloadDir string
	// Timeout gives up after this long (DefaultTimeout).
	Timeout time.Duration
	// MaxObjectBytes is the largest object read, stored or decompressed
	// (backup.DefaultMaxObjectBytes).
	MaxObjectBytes int64
	// ResultFile receives the JSON result (inpod.DefaultResultFile).
	ResultFile string
}

// Args are the program's arguments after the subcommand: Step and its flags for o, in
// the order the operator renders them.
func Args(o Options) []string {
	a := inpod.ArgList{Step}
	a = append(a, o.Source.Args()...)
	a.String("download-dir", o.DownloadDir)
	a.Duration("timeout", o.Timeout)
	a.Int64("max-object-bytes", o.MaxObjectBytes)
	a.String("result-file", o.ResultFile)
	return a
}

// flags defines the program's flags on a new flag set, storing into o.
func flags(o *Options) *flag.FlagSet {
	fs := inpod.FlagSet(Subcommand + " " + Step)
	o.Source.Register(fs, "backup directory (a read-only mounted claim) instead of S3", "check the newest periodic backup <path>_v<rev>_<time> of the path")
	fs.StringVar(&o.DownloadDir, "download-dir", "", "directory the object is downloaded into (removed after the check)")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "give up after this long")
	fs.StringVar(&o.ResultFile, "result-file", inpod.DefaultResultFile, "where to write the JSON result")
	fs.Int64Var(&o.MaxObjectBytes, "max-object-bytes", backup.DefaultMaxObjectBytes, "largest object read, stored or decompressed; decompression past 100x the stored bytes beyond 1 GiB is refused too (LimitExceeded)")
	return fs
}

// Parse is the inverse of Args: it reads args (Step and the flags) into Options, with
// every default filled in. Tests that play a check pod read its arguments with it.
func Parse(args []string) (Options, error) {
	if len(args) == 0 || args[0] != Step {
		return Options{}, fmt.Errorf("%s %s: arguments %q do not start with %q", Subcommand, Step, args, Step)
	}
	var o Options
	err := flags(&o).Parse(args[1:])
	return o, err
}

// Run runs the program with args (after Step) and returns its exit code.
func Run(args []string) int { return inpod.Main(args, flags, run) }

func run(lg *uzap.Logger, o Options) int {
	report := func(r restore.CheckResult) int {
		inpod.WriteResult(lg, o.ResultFile, r.Encode())
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
	switch {
	case o.DownloadDir == "":
		err = errors.New("--download-dir is required")
	case o.Source.Latest:
		err = errors.New("a snapshot check is of one exact object: --latest is not accepted")
	default:
		// The operator's own bounds (on S3): a gzip bomb stops at the ratio instead of
		// filling the pod's scratch volume up to its limit.
		store, objKey, err = o.Source.Open(backup.OperatorLimits(o.MaxObjectBytes))
	}
	if errors.As(err, new(inpod.CredentialsError)) {
		return report(restore.CheckResult{Reason: etcdv1beta2.ReasonSecretError, Error: err.Error()})
	}
	if err != nil {
		return report(restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: err.Error()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	return report(restore.CheckSnapshot(ctx, store, objKey, o.DownloadDir))
}
