// Command etcd-operator runs the operator's controller manager. Its subcommands are also
// the programs the operator runs inside pods (a distroless etcd image has no shell), so one
// image serves both.
//
//	etcd-operator [manager flags]     run the controllers (default)
//	etcd-operator version             print the version
//	etcd-operator restore [flags]     restore a member's data dir from a backup (init step)
//	etcd-operator backup [flags]      snapshot a cluster into a mounted directory (backup pod)
//	etcd-operator verify restore|check [flags]  the steps of a backup verification pod
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	uzap "go.uber.org/zap"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/pinkey"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	etcdwebhook "github.com/etcd-operator/etcd-operator/internal/webhook"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "version":
			fmt.Println(version)
			return
		case "restore":
			os.Exit(runRestore(os.Args[2:]))
		case "backup":
			os.Exit(runBackup(os.Args[2:]))
		case "verify":
			os.Exit(runVerify(os.Args[2:]))
		case "manager":
			os.Args = append(os.Args[:1], os.Args[2:]...)
		}
	}
	os.Exit(runManager(os.Args[1:]))
}

func runManager(args []string) int {
	fs := flag.NewFlagSet("manager", flag.ExitOnError)
	var (
		metricsAddr      = fs.String("metrics-bind-address", ":8443", "address the Prometheus metrics endpoint binds to; 0 disables it")
		metricsSecure    = fs.Bool("metrics-secure", true, "serve metrics over HTTPS (a self-signed certificate unless --metrics-cert-dir holds tls.crt and tls.key), only to callers whose bearer token the API server authenticates and allows get on /metrics; false serves plain HTTP to anyone who can reach the port")
		metricsCertDir   = fs.String("metrics-cert-dir", "", "directory with the metrics server's tls.crt and tls.key (default: a self-signed certificate kept in memory)")
		probeAddr        = fs.String("health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
		leaderElect      = fs.Bool("leader-elect", false, "elect a leader among replicas so only one acts at a time")
		leaderElectionNS = fs.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
		watchNamespace   = fs.String("watch-namespace", os.Getenv("WATCH_NAMESPACE"), "only manage resources in this namespace (default: all)")
		clusterDomain    = fs.String("cluster-domain", "", "DNS domain of the cluster, e.g. cluster.local (default: read from /etc/resolv.conf, else none)")
		operatorImage    = fs.String("operator-image", os.Getenv("OPERATOR_IMAGE"), "this operator's image, run by restored clusters' init containers (default: the image of the operator's own pod, else "+operatorimage.Default+")")
		scopeAnnotation  = fs.String("scope-annotation", "ignore", "which EtcdClusters to manage by CoreOS's etcd.database.coreos.com/scope annotation: ignore (all, whatever the annotation), namespaced (only those without it, like a CoreOS operator without -cluster-wide) or clusterwide (only those annotated clusterwide, like one with -cluster-wide)")
		allowAmbientS3   = fs.Bool("allow-ambient-s3-credentials", false, "let EtcdBackups and EtcdRestores with spec.s3.credentialsSource Environment use this operator's own S3 identity (environment, web identity token, instance role); off, they are refused and must name a Secret: a tenant could otherwise read and write every bucket the operator may")
		kubeAPIQPS       = fs.Float64("kube-api-qps", 50, "requests per second the operator may make to the Kubernetes API server, sustained (client-go's own default, 20 with a burst of 30, throttles an operator managing ~100 clusters)")
		kubeAPIBurst     = fs.Int("kube-api-burst", 100, "requests the operator may make to the Kubernetes API server in a burst above --kube-api-qps")
		allowExternal    = fs.Bool("allow-external-backup-endpoints", false, "let an EtcdBackup's spec.etcdEndpoints name etcd outside the backup's namespace (default: only EtcdClusters of its own namespace; a tenant who may create EtcdBackups could otherwise make the operator dial any address)")
	)
	var allowS3Endpoints stringList
	fs.Var(&allowS3Endpoints, "allow-s3-endpoint", "an S3 endpoint (host or host:port, as spec.s3.endpoint writes the host) this operator may dial although it is, or resolves to, a loopback, link-local or unspecified address or one of the API server's; repeat for more. Every other such endpoint is refused (S3EndpointRefused): a tenant could otherwise make the operator send signed requests to internal services")
	var clientServiceTypes stringList
	fs.Var(&clientServiceTypes, "client-service-types", "client Service types beyond ClusterIP that EtcdClusters may ask for (NodePort, LoadBalancer — which allocates node ports too; comma-separated or repeated). Default none: a NodePort or LoadBalancer Service exposes etcd outside the Kubernetes cluster, which a tenant who may create EtcdClusters but not Services must not get through the operator (such a cluster is refused with InvalidSpec)")
	allowSvcMetadata := fs.Bool("allow-client-service-metadata", false, "let EtcdClusters put annotations and labels on their client Service; off, such a cluster is refused with InvalidSpec: controllers of the Kubernetes cluster act on Service annotations and labels (exposing it through a tunnel or mesh, publishing DNS), which a tenant who may create EtcdClusters but not Services must not get through the operator")
	maxBackupBytes := fs.Int64("max-backup-bytes", backup.DefaultMaxObjectBytes, "largest backup (stored, and decompressed) this operator reads (it hashes a restore's object, streamed, never stored) and the ephemeral-storage limit of a snapshot check pod; larger ones, and decompression past 100x the stored bytes beyond 1 GiB, are refused (LimitExceeded)")
	wh := etcdwebhook.AddServerFlags(fs)
	opts := zap.Options{Development: false}
	opts.BindFlags(fs)
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	svcTypes, err := parseClientServiceTypes(clientServiceTypes)
	if err != nil {
		log.Error(err, "bad --client-service-types")
		return 1
	}
	scope, err := etcdcluster.ParseScope(*scopeAnnotation)
	if err != nil {
		log.Error(err, "bad --scope-annotation")
		return 2
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(etcdv1beta2.AddToScheme(scheme))
	utilruntime.Must(etcdv1.AddToScheme(scheme))

	metricsOpts := metricsserver.Options{BindAddress: *metricsAddr}
	if *metricsSecure {
		metricsOpts.SecureServing = true
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
		// Empty: controller-runtime's default directory, which holds nothing, so the
		// server makes a self-signed certificate in memory (nothing is written).
		metricsOpts.CertDir = *metricsCertDir
		// HTTP/1.1 only: the metrics port faces the network, and HTTP/2's stream resets
		// (CVE-2023-44487) cost a server more than a scraper needs.
		metricsOpts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "etcd-operator.etcd.database.coreos.com",
		LeaderElectionNamespace: *leaderElectionNS,
		WebhookServer:           etcdwebhook.NewServer(wh),
	}
	controllers.RestrictToNamespace(&mgrOpts, *watchNamespace)
	controllers.NeverCacheSecrets(&mgrOpts)
	controllers.CacheOnlyOwned(&mgrOpts)

	restCfg := ctrl.GetConfigOrDie()
	restCfg.QPS, restCfg.Burst = float32(*kubeAPIQPS), *kubeAPIBurst
	mgr, err := ctrl.NewManager(restCfg, mgrOpts)
	if err != nil {
		log.Error(err, "unable to create manager")
		return 1
	}
	if *operatorImage == "" {
		img, err := operatorimage.FromOwnPod(context.Background(), mgr.GetAPIReader(), os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"), "manager")
		if err != nil {
			log.Info("using the default operator image for restore init containers", "image", operatorimage.Default, "reason", err.Error())
			img = operatorimage.Default
		}
		*operatorImage = img
	}
	// The key that signs verified restore pins lives in the operator's own namespace.
	// Without it the operator works as before: nothing is signed or trusted and every
	// restore runs the snapshot checks (said here once, and by a RestorePinNotTrusted
	// event on each cluster whose restore carried a signed pin).
	pinKey, err := pinkey.LoadOrCreate(context.Background(), mgr.GetAPIReader(), mgr.GetClient(), os.Getenv("POD_NAMESPACE"))
	if err != nil {
		log.Error(err, "no restore pin key: restores will not reuse the snapshot checks of verified backups")
		pinKey = nil
	}
	if err := controllers.SetupWithManager(mgr, controllers.Options{
		ClusterDomain: *clusterDomain, OperatorImage: *operatorImage, AllowExternalBackupEndpoints: *allowExternal,
		Scope:                     scope,
		AllowAmbientS3Credentials: *allowAmbientS3,
		AllowS3Endpoints:          allowS3Endpoints,
		MaxBackupBytes:            *maxBackupBytes,
		PinKey:                    pinKey,
		ClientServiceTypes:        svcTypes,
		ClientServiceMetadata:     *allowSvcMetadata,
	}); err != nil {
		log.Error(err, "unable to set up controllers")
		return 1
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up health check")
		return 1
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up ready check")
		return 1
	}
	// The conversion webhook serves v1 beside the stored v1beta2; its certificate is
	// OLM's (--webhook-certs=provided) or provisioned here before the server starts.
	ctx := ctrl.SetupSignalHandler()
	if err := etcdwebhook.SetupServer(ctx, mgr, wh, etcdwebhook.RegisterConversion); err != nil {
		log.Error(err, "unable to set up the conversion webhook")
		return 1
	}
	log.Info("starting manager", "version", version, "watchNamespace", *watchNamespace)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager exited with an error")
		return 1
	}
	return 0
}

// runRestore is the init step of a member pod of a cluster created from a backup: it
// writes the member's data dir from the backup (verified against its SHA-256) unless the
// data dir already exists. The backup is read from S3 (--s3-path, credentials from the
// mounted awsSecret) or from a mounted volume (--dir and --key).
func runRestore(args []string) int {
	fs := podFlagSet("restore")
	src := addBackupSourceFlags(fs, "backup directory (a mounted PVC) instead of S3", "restore the newest periodic backup <path>_v<rev>_<time> of the path")
	var (
		checksum     = fs.String("checksum", "", "expected SHA-256 of the stored backup (hex)")
		checksPassed = fs.Bool("checks-passed-for-pin", false, "the snapshot checks already passed on the bytes --checksum pins: skip them when the downloaded bytes hash to it")
		fromMember   = fs.String("from-member", "", "client URL of a live member to copy the data from instead of a backup (quorum-loss recovery)")
		minRevision  = fs.Int64("min-revision", 0, "with --from-member: refuse a snapshot older than this revision")
		clientTLSDir = fs.String("client-tls-dir", "", "with an https --from-member: directory with the client TLS secret's files ("+etcdadmin.ClientCertKey+", "+etcdadmin.ClientKeyKey+", "+etcdadmin.ClientCAKey+")")
		name         = fs.String("name", "", "member name")
		dataDir      = fs.String("data-dir", "", "member data directory to create")
		peerURLs     = fs.String("initial-advertise-peer-urls", "", "member peer URLs, comma-separated")
		initial      = fs.String("initial-cluster", "", "initial cluster (name=peerURL,...)")
		token        = fs.String("initial-cluster-token", "", "initial cluster token")
		timeout      = fs.Duration("timeout", 30*time.Minute, "give up after this long")
	)
	if !parsePodFlags(os.Stderr, fs, args) {
		return 2
	}
	lg, _ := uzap.NewProduction()
	defer lg.Sync() //nolint:errcheck
	fail := func(err error) int {
		lg.Error("restore failed", uzap.Error(err))
		return 1
	}
	var (
		store  backup.Store
		member *restore.MemberSource
	)
	var objKey string
	fromS3, fromDir := src.given()
	switch {
	case *fromMember != "" && !fromS3 && !fromDir:
		member = &restore.MemberSource{Endpoint: *fromMember, MinRevision: *minRevision}
		if *clientTLSDir != "" {
			tlsCfg, err := etcdadmin.ClientTLSFromDir(*clientTLSDir)
			if err != nil {
				return fail(err)
			}
			member.TLS = tlsCfg
		}
	case fromS3 && !fromDir && *fromMember == "":
		var err error
		if store, objKey, err = src.s3Store(); err != nil {
			return fail(err)
		}
	case fromDir && !fromS3 && *fromMember == "":
		var err error
		if store, objKey, err = src.fsStore(); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("give exactly one of --s3-path, --dir and --from-member"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := restore.Restore(ctx, restore.Options{
		Store: store, Member: member, Key: objKey, Latest: *src.latest, SHA256: *checksum, Revision: *src.backupRevision,
		// The operator renders --checks-passed-for-pin only after it verified its own
		// signature over this pin (controllers/etcdcluster/act_restorepin.go); even then the
		// checks are skipped only if the bytes downloaded hash to the pin.
		PinVerified: *checksPassed && *checksum != "",
		Name:        *name, DataDir: *dataDir, PeerURLs: strings.Split(*peerURLs, ","),
		InitialCluster: *initial, InitialClusterToken: *token, Log: lg,
	})
	if err != nil {
		return fail(err)
	}
	lg.Info("restore step done", uzap.String("key", res.Key), uzap.String("sha256", res.SHA256), uzap.Bool("skippedExistingDataDir", res.Skipped),
		uzap.Bool("snapshotChecksReused", res.ChecksReused))
	return 0
}

// runBackup is the program of the EtcdBackup controller's backup pod for storage type
// PVC: the operator cannot mount a claim itself, so this pod, with the claim mounted at
// --dir, streams one snapshot into it (data file plus SHA-256 sidecar, written atomically),
// applies retention to periodic backups and reports the outcome as JSON in its
// termination message (backup.JobResult), which the controller copies into status.
func runBackup(args []string) int {
	fs := podFlagSet("backup")
	var (
		endpoints   = fs.String("endpoints", "", "etcd client URLs, comma-separated")
		tlsDir      = fs.String("tls-dir", "", "directory with the client TLS secret's files ("+etcdadmin.ClientCertKey+", "+etcdadmin.ClientKeyKey+", "+etcdadmin.ClientCAKey+"); empty: no TLS")
		dir         = fs.String("dir", "", "backup directory (the mounted claim)")
		key         = fs.String("key", "", "backup path below --dir; with --periodic the base of <key>_v<revision>_<time>")
		periodic    = fs.Bool("periodic", false, "name the backup <key>_v<revision>_<time> and apply --max-backups")
		maxBackups  = fs.Int("max-backups", 0, "with --periodic: keep this many newest backups of --key (0: all)")
		maxAge      = fs.Duration("max-age", 0, "with --periodic: delete backups of --key older than this, never the newest (0: any age)")
		compression = fs.String("compression", "", "gzip, or empty for none")
		timeout     = fs.Duration("timeout", time.Minute, "give up after this long")
		resultFile  = fs.String("result-file", "/dev/termination-log", "where to write the JSON result (the container's terminationMessagePath)")
	)
	if !parsePodFlags(os.Stderr, fs, args) {
		return 2
	}
	lg, _ := uzap.NewProduction()
	defer lg.Sync() //nolint:errcheck
	// The kubelet creates the termination message file before the container starts;
	// where it does not exist (outside a pod), the result is only logged rather than
	// creating a stray file in /dev.
	report := func(j backup.JobResult) {
		f, err := os.OpenFile(*resultFile, os.O_WRONLY|os.O_TRUNC, 0)
		if err == nil {
			_, err = f.Write(j.Encode())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			lg.Warn("cannot write the result file", uzap.String("path", *resultFile), uzap.Error(err))
		}
	}
	fail := func(reason string, err error) int {
		lg.Error("backup failed", uzap.String("reason", reason), uzap.Error(err))
		report(backup.JobResult{Reason: reason, Error: err.Error()})
		return 1
	}
	if *endpoints == "" || *dir == "" || *key == "" {
		return fail(etcdv1beta2.ReasonBackupInvalidSpec, errors.New("--endpoints, --dir and --key are required"))
	}
	store, err := backup.NewFS(*dir)
	if err != nil {
		return fail(etcdv1beta2.ReasonStorageError, err)
	}
	cfg := etcdadmin.Config{Endpoints: strings.Split(*endpoints, ","), Retry: etcdadmin.Backoff{Budget: *timeout / 3}}
	if *tlsDir != "" {
		if cfg.TLS, err = etcdadmin.ClientTLSFromDir(*tlsDir); err != nil {
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
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := backup.SaveSnapshot(ctx, admin, store, backup.SnapshotRequest{
		Key: *key, Periodic: *periodic, MaxBackups: *maxBackups, MaxAge: *maxAge, Compression: backup.Compression(*compression),
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return fail(etcdv1beta2.ReasonTimeout, fmt.Errorf("backup did not finish within %v: %w", *timeout, err))
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

// stringList is a repeatable string flag.
// parseClientServiceTypes checks --client-service-types: NodePort and LoadBalancer only
// (ClusterIP is always allowed; ExternalName is no Service for etcd).
func parseClientServiceTypes(l stringList) ([]corev1.ServiceType, error) {
	var out []corev1.ServiceType
	for _, v := range l {
		switch t := corev1.ServiceType(v); t {
		case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			out = append(out, t)
		case corev1.ServiceTypeClusterIP:
		default:
			return nil, fmt.Errorf("%q: want NodePort or LoadBalancer", v)
		}
	}
	return out, nil
}

type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// podFlagSet is the flag set of a program the operator runs in a pod (restore step,
// backup, verification). The operator renders every flag; a bad one comes from a field
// of the tenant's resource that admission let through. Its error must reach the pod's
// termination message as one line naming the flag, not followed by the usage banner the
// standard flag package prints (which crowded out the cause in status).
func podFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parsePodFlags parses args into fs, reporting a failure as one line on w (stderr).
func parsePodFlags(w io.Writer, fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(w, "%s: %v (the operator renders this flag from the resource's spec)\n", fs.Name(), err)
		return false
	}
	return true
}
