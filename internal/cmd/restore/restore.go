// Package restore is the init step of a member pod of a cluster created from a backup
// (`<operator> restore [flags]`, internal/render's restore init container): it writes
// the member's data dir from the backup (verified against its SHA-256) unless the data
// dir already exists. The backup is read from S3 (--s3-path, credentials from the
// mounted awsSecret), from a mounted volume (--dir and --key), or streamed from a live
// member (--from-member, quorum-loss recovery).
package restore

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	uzap "go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// Subcommand is the operator binary's subcommand that runs this program.
const Subcommand = "restore"

// DefaultTimeout is --timeout's default.
const DefaultTimeout = 30 * time.Minute

// Options are the step's flags. A zero field is not rendered (its flag's default
// applies).
type Options struct {
	// Source is the backup (S3 or a mounted claim); empty with FromMember.
	Source inpod.Source
	// Checksum is the expected SHA-256 of the stored backup (hex).
	Checksum string
	// ChecksPassedForPin: the snapshot checks already passed on the bytes Checksum pins;
	// they are skipped when the downloaded bytes hash to it.
	ChecksPassedForPin bool
	// FromMember is the client URL of a live member to copy the data from instead of a
	// backup (quorum-loss recovery); MinRevision refuses an older snapshot; ClientTLSDir
	// holds the client TLS secret's files for an https FromMember.
	FromMember   string
	MinRevision  int64
	ClientTLSDir string
	// The member etcd will start as.
	Name, DataDir, InitialAdvertisePeerURLs, InitialCluster, InitialClusterToken string
	// Timeout gives up after this long (DefaultTimeout).
	Timeout time.Duration
}

// Args are the step's flags for o (after the subcommand), in the order the operator
// renders them.
func Args(o Options) []string {
	var a inpod.ArgList
	a.String("from-member", o.FromMember)
	a.Int64("min-revision", o.MinRevision)
	a.String("client-tls-dir", o.ClientTLSDir)
	a = append(a, o.Source.Args()...)
	a.String("checksum", o.Checksum)
	a.Bool("checks-passed-for-pin", o.ChecksPassedForPin)
	a.String("name", o.Name)
	a.String("data-dir", o.DataDir)
	a.String("initial-advertise-peer-urls", o.InitialAdvertisePeerURLs)
	a.String("initial-cluster", o.InitialCluster)
	a.String("initial-cluster-token", o.InitialClusterToken)
	a.Duration("timeout", o.Timeout)
	return a
}

// flags defines the step's flags on a new flag set, storing into o.
func flags(o *Options) *flag.FlagSet {
	fs := inpod.FlagSet(Subcommand)
	o.Source.Register(fs, "backup directory (a mounted PVC) instead of S3", "restore the newest periodic backup <path>_v<rev>_<time> of the path")
	fs.StringVar(&o.Checksum, "checksum", "", "expected SHA-256 of the stored backup (hex)")
	fs.BoolVar(&o.ChecksPassedForPin, "checks-passed-for-pin", false, "the snapshot checks already passed on the bytes --checksum pins: skip them when the downloaded bytes hash to it")
	fs.StringVar(&o.FromMember, "from-member", "", "client URL of a live member to copy the data from instead of a backup (quorum-loss recovery)")
	fs.Int64Var(&o.MinRevision, "min-revision", 0, "with --from-member: refuse a snapshot older than this revision")
	fs.StringVar(&o.ClientTLSDir, "client-tls-dir", "", "with an https --from-member: directory with the client TLS secret's files ("+etcdadmin.ClientCertKey+", "+etcdadmin.ClientKeyKey+", "+etcdadmin.ClientCAKey+")")
	fs.StringVar(&o.Name, "name", "", "member name")
	fs.StringVar(&o.DataDir, "data-dir", "", "member data directory to create")
	fs.StringVar(&o.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", "", "member peer URLs, comma-separated")
	fs.StringVar(&o.InitialCluster, "initial-cluster", "", "initial cluster (name=peerURL,...)")
	fs.StringVar(&o.InitialClusterToken, "initial-cluster-token", "", "initial cluster token")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "give up after this long")
	return fs
}

// Run runs the step with args (after the subcommand) and returns its exit code.
func Run(args []string) int { return inpod.Main(args, flags, run) }

func run(lg *uzap.Logger, o Options) int {
	fail := func(err error) int {
		lg.Error("restore failed", uzap.Error(err))
		return 1
	}
	var (
		store  backup.Store
		member *restore.MemberSource
		objKey string
	)
	fromS3, fromDir := o.Source.Given()
	switch {
	case o.FromMember != "" && !fromS3 && !fromDir:
		member = &restore.MemberSource{Endpoint: o.FromMember, MinRevision: o.MinRevision}
		if o.ClientTLSDir != "" {
			tlsCfg, err := etcdadmin.ClientTLSFromDir(o.ClientTLSDir)
			if err != nil {
				return fail(err)
			}
			member.TLS = tlsCfg
		}
	case fromS3 && !fromDir && o.FromMember == "":
		var err error
		if store, objKey, err = o.Source.S3Store(nil); err != nil {
			return fail(err)
		}
	case fromDir && !fromS3 && o.FromMember == "":
		var err error
		if store, objKey, err = o.Source.FSStore(); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("give exactly one of --s3-path, --dir and --from-member"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	res, err := restore.Restore(ctx, restore.Options{
		Store: store, Member: member, Key: objKey, Latest: o.Source.Latest, SHA256: o.Checksum, Revision: o.Source.BackupRevision,
		// The operator renders --checks-passed-for-pin only after it verified its own
		// signature over this pin (controllers/etcdcluster/act_restorepin.go); even then the
		// checks are skipped only if the bytes downloaded hash to the pin.
		PinVerified: o.ChecksPassedForPin && o.Checksum != "",
		Name:        o.Name, DataDir: o.DataDir, PeerURLs: strings.Split(o.InitialAdvertisePeerURLs, ","),
		InitialCluster: o.InitialCluster, InitialClusterToken: o.InitialClusterToken, Log: lg,
	})
	if err != nil {
		return fail(err)
	}
	lg.Info("restore step done", uzap.String("key", res.Key), uzap.String("sha256", res.SHA256), uzap.Bool("skippedExistingDataDir", res.Skipped),
		uzap.Bool("snapshotChecksReused", res.ChecksReused))
	return 0
}
