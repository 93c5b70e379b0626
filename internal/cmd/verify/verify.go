// Package verify is the program of the EtcdBackup controller's verification pod
// (`<operator> verify restore|check [flags]`, render.VerifyPod), one step per container:
//
//	verify restore  the init container: restore the backup (S3 or a read-only claim) into
//	                the pod's emptyDir and write what the member must serve beside it
//	verify check    the check container: wait for the etcd container (loopback only) and
//	                compare its revision and key count with that expectation
//
// Each writes a restore.CheckResult as JSON to its termination message. (`verify
// snapshot`, the snapshot check pod, is internal/cmd/snapshotcheck.)
package verify

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	uzap "go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// Subcommand is the operator binary's subcommand that runs this program; RestoreStep and
// CheckStep follow it.
const (
	Subcommand  = "verify"
	RestoreStep = "restore"
	CheckStep   = "check"
)

// Defaults of the steps' flags.
const (
	DefaultName           = "verify"
	DefaultPeerURL        = "http://127.0.0.1:2380"
	DefaultEndpoint       = "http://127.0.0.1:2379"
	DefaultRestoreTimeout = 10 * time.Minute
	DefaultCheckTimeout   = 2 * time.Minute
)

// RestoreOptions are the restore step's flags.
type RestoreOptions struct {
	// Source is the backup (S3 or a read-only mounted claim).
	Source inpod.Source
	// Name and PeerURL are the one member's (DefaultName, DefaultPeerURL); DataDir the
	// data directory to create.
	Name, DataDir, PeerURL string
	// ExpectFile receives what the member must serve.
	ExpectFile string
	// Timeout gives up after this long (DefaultRestoreTimeout).
	Timeout time.Duration
	// ResultFile receives the JSON result (inpod.DefaultResultFile).
	ResultFile string
}

// CheckOptions are the check step's flags.
type CheckOptions struct {
	// Endpoint is the restored member's client URL (DefaultEndpoint).
	Endpoint string
	// ExpectFile is what the member must serve, as the restore step wrote it.
	ExpectFile string
	// Timeout is how long the member may take to serve (DefaultCheckTimeout).
	Timeout time.Duration
	// ResultFile receives the JSON result (inpod.DefaultResultFile).
	ResultFile string
}

// RestoreArgs are the restore step's arguments after the subcommand: RestoreStep and
// its flags for o, in the order the operator renders them.
func RestoreArgs(o RestoreOptions) []string {
	a := inpod.ArgList{RestoreStep}
	a = append(a, o.Source.Args()...)
	a.String("name", o.Name)
	a.String("peer-url", o.PeerURL)
	a.String("data-dir", o.DataDir)
	a.String("expect-file", o.ExpectFile)
	a.Duration("timeout", o.Timeout)
	a.String("result-file", o.ResultFile)
	return a
}

// CheckArgs are the check step's arguments after the subcommand: CheckStep and its
// flags for o, in the order the operator renders them.
func CheckArgs(o CheckOptions) []string {
	a := inpod.ArgList{CheckStep}
	a.String("endpoint", o.Endpoint)
	a.String("expect-file", o.ExpectFile)
	a.Duration("timeout", o.Timeout)
	a.String("result-file", o.ResultFile)
	return a
}

// restoreFlags defines the restore step's flags on a new flag set, storing into o.
func restoreFlags(o *RestoreOptions) *flag.FlagSet {
	fs := inpod.FlagSet(Subcommand + " " + RestoreStep)
	o.Source.Register(fs, "backup directory (a read-only mounted claim) instead of S3", "verify the newest periodic backup <path>_v<rev>_<time> of the path")
	fs.StringVar(&o.Name, "name", DefaultName, "member name")
	fs.StringVar(&o.DataDir, "data-dir", "", "data directory to create")
	fs.StringVar(&o.PeerURL, "peer-url", DefaultPeerURL, "the member's peer URL")
	fs.StringVar(&o.ExpectFile, "expect-file", "", "where to write what the member must serve")
	fs.DurationVar(&o.Timeout, "timeout", DefaultRestoreTimeout, "give up after this long")
	fs.StringVar(&o.ResultFile, "result-file", inpod.DefaultResultFile, "where to write the JSON result")
	return fs
}

// checkFlags defines the check step's flags on a new flag set, storing into o.
func checkFlags(o *CheckOptions) *flag.FlagSet {
	fs := inpod.FlagSet(Subcommand + " " + CheckStep)
	fs.StringVar(&o.Endpoint, "endpoint", DefaultEndpoint, "client URL of the restored member")
	fs.StringVar(&o.ExpectFile, "expect-file", "", "what the member must serve, as the restore step wrote it")
	fs.DurationVar(&o.Timeout, "timeout", DefaultCheckTimeout, "how long the member may take to serve")
	fs.StringVar(&o.ResultFile, "result-file", inpod.DefaultResultFile, "where to write the JSON result")
	return fs
}

// parse reads args (the step and its flags) into that step's options (with every
// default filled in), reporting a bad step or flag as one line on w.
func parse(w io.Writer, args []string) (step string, r RestoreOptions, c CheckOptions, ok bool) {
	if len(args) == 0 {
		fmt.Fprintln(w, "usage: verify restore|check|snapshot [flags]")
		return "", r, c, false
	}
	switch step = args[0]; step {
	case RestoreStep:
		r, ok = inpod.ParseOptions(w, restoreFlags, args[1:])
		return step, r, c, ok
	case CheckStep:
		c, ok = inpod.ParseOptions(w, checkFlags, args[1:])
		return step, r, c, ok
	}
	fmt.Fprintf(w, "verify: unknown step %q (restore, check or snapshot)\n", args[0])
	return "", r, c, false
}

// Run runs the step args name (after the subcommand) and returns its exit code.
func Run(args []string) int {
	step, r, c, ok := parse(os.Stderr, args)
	switch {
	case !ok:
		return 2
	case step == CheckStep:
		return inpod.WithLogger(c, runCheck)
	}
	return inpod.WithLogger(r, runRestore)
}

func runRestore(lg *uzap.Logger, o RestoreOptions) int {
	report := func(r restore.CheckResult) int {
		inpod.WriteResult(lg, o.ResultFile, r.Encode())
		if r.Reason != "" {
			lg.Error("verification restore failed", uzap.String("reason", r.Reason), uzap.String("error", r.Error))
			return 1
		}
		lg.Info("backup restored for verification", uzap.String("key", r.Key), uzap.Int64("revision", r.Revision))
		return 0
	}
	invalid := func(err error) int {
		return report(restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: err.Error()})
	}
	if o.DataDir == "" || o.ExpectFile == "" {
		return invalid(errors.New("--data-dir and --expect-file are required"))
	}
	store, objKey, err := o.Source.Open(nil)
	if errors.As(err, new(inpod.CredentialsError)) {
		return report(restore.CheckResult{Reason: etcdv1beta2.ReasonSecretError, Error: err.Error()})
	}
	if err != nil {
		return invalid(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	return report(restore.RestoreForVerification(ctx, restore.Options{
		Store: store, Key: objKey, Latest: o.Source.Latest, Revision: o.Source.BackupRevision,
		Name: o.Name, DataDir: o.DataDir, PeerURLs: []string{o.PeerURL},
		InitialCluster: o.Name + "=" + o.PeerURL, InitialClusterToken: o.Name, Log: lg,
	}, o.ExpectFile))
}

func runCheck(lg *uzap.Logger, o CheckOptions) int {
	var r restore.CheckResult
	if want, err := restore.ReadExpectation(o.ExpectFile); err != nil {
		r = restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: fmt.Sprintf("read the expectation: %v", err)}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
		r = restore.CheckMember(ctx, o.Endpoint, want)
		cancel()
	}
	inpod.WriteResult(lg, o.ResultFile, r.Encode())
	if r.Reason != "" {
		lg.Error("verification failed", uzap.String("reason", r.Reason), uzap.String("error", r.Error))
		return 1
	}
	lg.Info("backup verified", uzap.String("key", r.Key), uzap.Int64("revision", r.Revision), uzap.Int64("servedRevision", r.ServedRevision), uzap.Int64("keys", r.KeyCount))
	return 0
}
