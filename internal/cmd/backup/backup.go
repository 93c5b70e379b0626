// Package backup is the program of the EtcdBackup controller's backup pod for storage
// type PVC (`<operator> backup [flags]`): the operator cannot mount a claim itself, so
// this pod, with the claim mounted at --dir, streams one snapshot into it (data file plus
// SHA-256 sidecar, written atomically), applies retention to periodic backups and
// reports the outcome as JSON in its termination message (backup.JobResult), which the
// controller copies into status.
package backup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	uzap "go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Subcommand is the operator binary's subcommand that runs this program.
const Subcommand = "backup"

// DefaultTimeout is --timeout's default.
const DefaultTimeout = time.Minute

// Options are the program's flags. A zero field is not rendered (its flag's default
// applies).
type Options struct {
	// Endpoints are etcd's client URLs; TLSDir holds the client TLS secret's files
	// (empty: no TLS).
	Endpoints []string
	TLSDir    string
	// Dir is the mounted claim, Key the backup's path below it (with Periodic the base
	// of <key>_v<revision>_<time>).
	Dir, Key string
	// Periodic names the backup <key>_v<revision>_<time> and applies MaxBackups (0: keep
	// all) and MaxAge (0: any age).
	Periodic   bool
	MaxBackups int
	MaxAge     time.Duration
	// Compression is gzip, or empty for none.
	Compression string
	// Timeout gives up after this long (DefaultTimeout).
	Timeout time.Duration
	// ResultFile receives the JSON result (inpod.DefaultResultFile).
	ResultFile string
}

// Args are the program's flags for o (after the subcommand), in the order the operator
// renders them.
func Args(o Options) []string {
	var a inpod.ArgList
	a.String("endpoints", strings.Join(o.Endpoints, ","))
	a.String("dir", o.Dir)
	a.String("key", o.Key)
	a.Duration("timeout", o.Timeout)
	a.Bool("periodic", o.Periodic)
	a.Int64("max-backups", int64(o.MaxBackups))
	a.Duration("max-age", o.MaxAge)
	a.String("compression", o.Compression)
	a.String("tls-dir", o.TLSDir)
	a.String("result-file", o.ResultFile)
	return a
}

// endpointList is --endpoints: comma-separated URLs.
type endpointList []string

func (l *endpointList) String() string { return strings.Join(*l, ",") }

func (l *endpointList) Set(v string) error {
	*l = nil
	if v != "" {
		*l = strings.Split(v, ",")
	}
	return nil
}

// flags defines the program's flags on a new flag set, storing into o.
func flags(o *Options) *flag.FlagSet {
	fs := inpod.FlagSet(Subcommand)
	fs.Var((*endpointList)(&o.Endpoints), "endpoints", "etcd client URLs, comma-separated")
	fs.StringVar(&o.TLSDir, "tls-dir", "", "directory with the client TLS secret's files ("+etcdadmin.ClientCertKey+", "+etcdadmin.ClientKeyKey+", "+etcdadmin.ClientCAKey+"); empty: no TLS")
	fs.StringVar(&o.Dir, "dir", "", "backup directory (the mounted claim)")
	fs.StringVar(&o.Key, "key", "", "backup path below --dir; with --periodic the base of <key>_v<revision>_<time>")
	fs.BoolVar(&o.Periodic, "periodic", false, "name the backup <key>_v<revision>_<time> and apply --max-backups")
	fs.IntVar(&o.MaxBackups, "max-backups", 0, "with --periodic: keep this many newest backups of --key (0: all)")
	fs.DurationVar(&o.MaxAge, "max-age", 0, "with --periodic: delete backups of --key older than this, never the newest (0: any age)")
	fs.StringVar(&o.Compression, "compression", "", "gzip, or empty for none")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "give up after this long")
	fs.StringVar(&o.ResultFile, "result-file", inpod.DefaultResultFile, "where to write the JSON result (the container's terminationMessagePath)")
	return fs
}

// Run runs the program with args (after the subcommand) and returns its exit code.
func Run(args []string) int { return inpod.Main(args, flags, run) }

func run(lg *uzap.Logger, o Options) int {
	report := func(j backup.JobResult) { inpod.WriteResult(lg, o.ResultFile, j.Encode()) }
	fail := func(reason string, err error) int {
		lg.Error("backup failed", uzap.String("reason", reason), uzap.Error(err))
		report(backup.JobResult{Reason: reason, Error: err.Error()})
		return 1
	}
	if len(o.Endpoints) == 0 || o.Dir == "" || o.Key == "" {
		return fail(etcdv1beta2.ReasonBackupInvalidSpec, errors.New("--endpoints, --dir and --key are required"))
	}
	store, err := backup.NewFS(o.Dir)
	if err != nil {
		return fail(etcdv1beta2.ReasonStorageError, err)
	}
	cfg := etcdadmin.Config{Endpoints: o.Endpoints, Retry: etcdadmin.Backoff{Budget: o.Timeout / 3}}
	if o.TLSDir != "" {
		if cfg.TLS, err = etcdadmin.ClientTLSFromDir(o.TLSDir); err != nil {
			return fail(etcdv1beta2.ReasonSecretError, err)
		}
	}
	if pw := os.Getenv(etcdadmin.PasswordEnv); pw != "" { // a cluster with etcd auth
		cfg.Username, cfg.Password = etcdadmin.RootUser, pw
	}
	admin, err := etcdadmin.New(cfg)
	if err != nil {
		return fail(etcdv1beta2.ReasonSnapshotFailed, err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	res, err := backup.SaveSnapshot(ctx, admin, store, backup.SnapshotRequest{
		Key: o.Key, Periodic: o.Periodic, MaxBackups: o.MaxBackups, MaxAge: o.MaxAge, Compression: backup.Compression(o.Compression),
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return fail(etcdv1beta2.ReasonTimeout, fmt.Errorf("backup did not finish within %v: %w", o.Timeout, err))
	case errors.Is(err, backup.ErrSnapshot):
		return fail(etcdv1beta2.ReasonSnapshotFailed, err)
	case err != nil:
		return fail(etcdv1beta2.ReasonStorageError, err)
	}
	report(backup.NewJobResult(res))
	lg.Info("backup stored", uzap.String("location", res.Location), uzap.Int64("revision", res.Revision),
		uzap.String("sha256", res.Object.SHA256), uzap.Int("pruned", len(res.Pruned)))
	return 0
}
