package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Connector makes the Plugin a command runs with, once its flags are parsed (tests
// return one on fake clients).
type Connector func(o ConnOptions, out io.Writer) (*Plugin, error)

// NewCommand is the `kubectl etcd` command tree.
func NewCommand(connect Connector, out, errOut io.Writer) *cobra.Command {
	var conn ConnOptions
	var output string
	root := &cobra.Command{
		Use:   "kubectl-etcd",
		Short: "Inspect and operate the etcd clusters the etcd operator runs",
		Long: "kubectl etcd inspects and operates EtcdClusters through the Kubernetes API only:\n" +
			"status, members, backups, restores, defragmentation and support bundles.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs plugins as kubectl-etcd; show the name users type.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl etcd"},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	pf := root.PersistentFlags()
	pf.StringVar(&conn.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	pf.StringVar(&conn.Context, "context", "", "the kubeconfig context to use")
	pf.StringVarP(&conn.Namespace, "namespace", "n", "", "the namespace of the cluster (default: the context's)")
	pf.StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table)")

	// plugin connects after the flags are parsed and -o is checked.
	plugin := func() (*Plugin, error) {
		if err := checkOutput(output); err != nil {
			return nil, err
		}
		if output == "table" {
			output = OutputTable
		}
		return connect(conn, out)
	}
	// onCluster is a subcommand's RunE: connect, then act on the one cluster named.
	onCluster := func(act func(ctx context.Context, p *Plugin, name string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			p, err := plugin()
			if err != nil {
				return err
			}
			return act(cmd.Context(), p, args[0])
		}
	}

	root.AddCommand(&cobra.Command{
		Use:     "status NAME",
		Short:   "Members (role, version, database size, health), alarms, backups and conditions of a cluster",
		Example: "  kubectl etcd status example\n  kubectl etcd status example -n prod -o yaml",
		Args:    exactlyOne("status"),
		RunE: onCluster(func(ctx context.Context, p *Plugin, name string) error {
			st, err := p.Status(ctx, name)
			if err != nil {
				return err
			}
			return PrintStatus(p.Out, output, st, p.Now())
		}),
	})

	member := &cobra.Command{Use: "member", Short: "Members of a cluster"}
	member.AddCommand(&cobra.Command{
		Use:     "list NAME",
		Short:   "List a cluster's members with their pods",
		Example: "  kubectl etcd member list example",
		Args:    exactlyOne("member list"),
		RunE: onCluster(func(ctx context.Context, p *Plugin, name string) error {
			st, err := p.Status(ctx, name)
			if err != nil {
				return err
			}
			return PrintMembers(p.Out, output, st.Members)
		}),
	})
	root.AddCommand(member)

	var bo BackupOptions
	backup := &cobra.Command{
		Use:   "backup NAME",
		Short: "Take a backup now: backup-now on the cluster's EtcdBackup, or a new one-shot EtcdBackup",
		Long: "Takes a backup of cluster NAME now. With one EtcdBackup naming the cluster (spec.clusterRef or\n" +
			"its endpoints), annotates it with etcd.database.coreos.com/backup-now (the operator runs each new\n" +
			"value once, at most once per 5 minutes per EtcdBackup); with several, --backup picks one. With\n" +
			"--one-shot, or when none names the cluster, creates a one-shot EtcdBackup: to a new key beside\n" +
			"the existing EtcdBackup's storage, or where --s3-path/--pvc-claim say.",
		Example: "  kubectl etcd backup example --wait\n" +
			"  kubectl etcd backup example --one-shot --s3-path backups/example/manual.db --s3-secret aws \\\n" +
			"      --s3-endpoint https://minio.example:9000 --s3-force-path-style",
		Args: exactlyOne("backup"),
		RunE: onCluster(func(ctx context.Context, p *Plugin, name string) error {
			return printedAnyway(p.Out, output, PrintBackup)(p.Backup(ctx, name, bo))
		}),
	}
	bf := backup.Flags()
	bf.StringVar(&bo.Backup, "backup", "", "the EtcdBackup to run now, when the cluster has several")
	bf.BoolVar(&bo.OneShot, "one-shot", false, "create a one-shot EtcdBackup instead of running an existing one")
	bf.StringVar(&bo.S3Path, "s3-path", "", "one-shot: <bucket>/<key> to write")
	bf.StringVar(&bo.S3Secret, "s3-secret", "", "one-shot: Secret with the files credentials and config (AWS shared-file format)")
	bf.StringVar(&bo.S3Endpoint, "s3-endpoint", "", "one-shot: endpoint of an S3-compatible store (empty: AWS)")
	bf.BoolVar(&bo.S3ForcePathStyle, "s3-force-path-style", false, "one-shot: address buckets as <endpoint>/<bucket>")
	bf.StringVar(&bo.PVCClaim, "pvc-claim", "", "one-shot: PersistentVolumeClaim to write to")
	bf.StringVar(&bo.PVCPath, "pvc-path", "", "one-shot: file path under the claim")
	bf.BoolVar(&bo.Wait, "wait", false, "wait for the backup to finish")
	bf.DurationVar(&bo.Timeout, "timeout", 5*time.Minute, "how long --wait waits")
	root.AddCommand(backup)

	var ro RestoreOptions
	restore := &cobra.Command{
		Use:   "restore NAME --from BACKUP",
		Short: "Create an EtcdRestore: cluster NAME from one of EtcdBackup BACKUP's backups",
		Long: "Creates an EtcdRestore that has the operator create cluster NAME from a backup EtcdBackup BACKUP\n" +
			"wrote (S3: the newest, or with --at the newest taken at or before that time, and/or with\n" +
			"--min-revision; PVC: the file it wrote). Backups are snapshots: --at chooses a backup, it does not\n" +
			"replay history to an arbitrary instant. An existing cluster NAME is refused unless --replace,\n" +
			"with which the operator deletes it only after verifying the backup, and the new cluster keeps\n" +
			"its spec (and its etcd auth: the operator carries the auth annotations and root Secret over).\n" +
			"A backup of a cluster with etcd auth restored into any other cluster would leave the operator\n" +
			"without root's password: refused unless --ignore-source-auth (then give the new cluster the\n" +
			"auth annotations and a copy of the source's root Secret yourself).",
		Example: "  kubectl etcd restore example-copy --from nightly --wait\n" +
			"  kubectl etcd restore example --from nightly --at 2026-12-03T10:00:00Z --replace",
		Args: exactlyOne("restore"),
		RunE: onCluster(func(ctx context.Context, p *Plugin, name string) error {
			return printedAnyway(p.Out, output, PrintRestore)(p.Restore(ctx, name, ro))
		}),
	}
	rf := restore.Flags()
	rf.StringVar(&ro.From, "from", "", "the EtcdBackup whose backup to restore (required)")
	rf.StringVar(&ro.At, "at", "", "restore the newest backup taken at or before this RFC 3339 time")
	rf.Int64Var(&ro.MinRevision, "min-revision", 0, "restore only a backup holding at least this etcd revision")
	rf.IntVar(&ro.Size, "size", 0, "members of the restored cluster (default: the replaced cluster's, else 3)")
	rf.BoolVar(&ro.IgnoreSourceAuth, "ignore-source-auth", false, "restore a backup of a cluster with etcd authentication into another name anyway;\n"+
		"then annotate the new cluster with auth: enabled and auth-root-secret naming a copy of the source's root Secret")
	rf.BoolVar(&ro.Replace, "replace", false, "replace an existing cluster NAME (deleted by the operator after it verified the backup)")
	rf.BoolVar(&ro.Wait, "wait", false, "wait until the restored cluster is Available or the restore failed")
	rf.DurationVar(&ro.Timeout, "timeout", 10*time.Minute, "how long --wait waits")
	root.AddCommand(restore)

	var do DefragOptions
	defrag := &cobra.Command{
		Use:   "defrag NAME",
		Short: "Defragment every member now, followers first and the leader last",
		Long: "Defragments each member of cluster NAME with etcdctl in its pod (pods/exec), one at a time,\n" +
			"followers first and the leader last; stops at the first failure. The operator itself\n" +
			"defragments on a schedule or past a threshold (spec.maintenance) and has no on-demand trigger.\n" +
			"Refused while the cluster is not Available with every member healthy or an operator run is in\n" +
			"progress (--force overrides), and for clusters with etcd authentication (root's password is\n" +
			"never read nor sent through pods/exec).",
		Example: "  kubectl etcd defrag example",
		Args:    exactlyOne("defrag"),
		RunE: onCluster(func(ctx context.Context, p *Plugin, name string) error {
			return printedAnyway(p.Out, output, PrintDefrag)(p.Defrag(ctx, name, do))
		}),
	}
	defrag.Flags().BoolVar(&do.Force, "force", false, "defragment although the cluster is not fully healthy or a maintenance run is in progress")
	defrag.Flags().DurationVar(&do.Timeout, "timeout", 5*time.Minute, "bound on each member's defragmentation")
	root.AddCommand(defrag)

	var rpo ReportOptions
	report := &cobra.Command{
		Use:   "report NAME",
		Short: "Write a support bundle: objects, events, operator and member logs, etcdctl endpoint status",
		Long: "Writes a support bundle of cluster NAME: the EtcdCluster and its EtcdBackups and EtcdRestores,\n" +
			"member pods, Services and claims, events, member and operator logs, and etcdctl endpoint status\n" +
			"and alarm list of each member (pods/exec). No Secret is read; Secrets appear by name only, and\n" +
			"credential-like values in pod specs, cluster specs and logs are replaced by REDACTED.",
		Example: "  kubectl etcd report example\n  kubectl etcd report example -f /tmp/example-report.tar.gz\n" +
			"  kubectl etcd report example -f /tmp/example-report   # a directory",
		Args: exactlyOne("report"),
		RunE: onCluster(func(ctx context.Context, p *Plugin, name string) error {
			r, err := p.Report(ctx, name, rpo)
			if err != nil {
				return err
			}
			return PrintReport(p.Out, output, r)
		}),
	}
	report.Flags().StringVarP(&rpo.Path, "file", "f", "", "where to write: a path ending .tar.gz or .tgz, else a new directory (default: etcd-report-<ns>-<name>-<time>.tar.gz)")
	report.Flags().StringVar(&rpo.OperatorNamespace, "operator-namespace", "", "namespace of the operator's pods (default: search all namespaces)")
	report.Flags().Int64Var(&rpo.LogLines, "log-lines", defaultLogLines, "lines kept of each log (the last ones)")
	report.Flags().BoolVar(&rpo.NoExec, "no-exec", false, "do not run etcdctl in the member pods")
	root.AddCommand(report)
	return root
}

// printedAnyway prints r, what backup, restore or defrag did, also when it then failed, so
// that the user sees how far it got; it returns that failure rather than a later printing
// error. A nil r (it failed before doing anything) prints nothing.
func printedAnyway[R *BackupResult | *RestoreResult | []DefragResult](w io.Writer, format string, print func(io.Writer, string, R) error) func(R, error) error {
	return func(r R, err error) error {
		if r == nil {
			return err
		}
		if perr := print(w, format, r); err == nil {
			return perr
		}
		return err
	}
}

// exactlyOne requires the one cluster name a subcommand takes.
func exactlyOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%s takes one EtcdCluster name, got %d arguments (%q)", what, len(args), args)
		}
		return nil
	}
}

// Main runs the plugin with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := NewCommand(Connect, os.Stdout, os.Stderr)
	cmd.SetArgs(os.Args[1:])
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}
