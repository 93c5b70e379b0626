// Command etcd-operator runs the operator's controller manager. Its subcommands are also
// the programs the operator runs inside pods (a distroless etcd image has no shell), so one
// image serves both.
//
//	etcd-operator [manager flags]     run the controllers (default)
//	etcd-operator version             print the version
//	etcd-operator restore [flags]     restore a member's data dir from a backup (init step; internal/cmd/restore)
//	etcd-operator backup [flags]      snapshot a cluster into a mounted directory (backup pod; internal/cmd/backup)
//	etcd-operator verify restore|check [flags]  the steps of a backup verification pod (internal/cmd/verify)
//	etcd-operator verify snapshot [flags]       a snapshot check pod (internal/cmd/snapshotcheck)
//
// This package only dispatches to those programs, and runs the manager.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

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
	cmdbackup "github.com/etcd-operator/etcd-operator/internal/cmd/backup"
	cmdrestore "github.com/etcd-operator/etcd-operator/internal/cmd/restore"
	cmdsnapshotcheck "github.com/etcd-operator/etcd-operator/internal/cmd/snapshotcheck"
	cmdverify "github.com/etcd-operator/etcd-operator/internal/cmd/verify"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/pinkey"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
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
		case cmdrestore.Subcommand:
			os.Exit(cmdrestore.Run(os.Args[2:]))
		case cmdbackup.Subcommand:
			os.Exit(cmdbackup.Run(os.Args[2:]))
		case cmdverify.Subcommand:
			if len(os.Args) > 2 && os.Args[2] == cmdsnapshotcheck.Step {
				os.Exit(cmdsnapshotcheck.Run(os.Args[3:]))
			}
			os.Exit(cmdverify.Run(os.Args[2:]))
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
		clusterWorkers   = fs.Int("cluster-workers", etcdcluster.DefaultWorkers, "EtcdClusters reconciled at once; a reconcile waits on etcd (up to seconds for a member still starting) and holds its worker meanwhile, so a fleet created or repaired at once queues behind them (README \"A large fleet\")")
		shardKey         = fs.String("shard-key", "", "label or annotation of EtcdClusters whose value splits a fleet between operator instances (e.g. etcd.database.coreos.com/shard); with --shard, this instance manages only the clusters whose value is its own (a label wins over an annotation of the same key). Default: no sharding")
		shardValue       = fs.String("shard", "", "this instance's shard: the value of --shard-key on the clusters it manages (a DNS label: lowercase letters, digits, '-'); it also names the instance's leader-election Lease, so the shards elect their leaders apart (the --shard-default instance keeps the unsharded Lease)")
		shardDefault     = fs.Bool("shard-default", false, "with --shard-key: also manage the clusters without the key, and run the EtcdBackup and EtcdRestore controllers (which are not sharded). Start exactly one instance of a fleet with it: it elects on the unsharded Lease, so an unsharded instance rolled to it hands over")
		allowExternal    = fs.Bool("allow-external-backup-endpoints", false, "let an EtcdBackup's spec.etcdEndpoints name etcd outside the backup's namespace (default: only EtcdClusters of its own namespace; a tenant who may create EtcdBackups could otherwise make the operator dial any address)")
	)
	var allowS3Endpoints stringList
	fs.Var(&allowS3Endpoints, "allow-s3-endpoint", "an S3 endpoint (host or host:port, as spec.s3.endpoint writes the host) this operator may dial although it is, or resolves to, a loopback, link-local or unspecified address or one of the API server's; repeat for more. Every other such endpoint is refused (S3EndpointRefused): a tenant could otherwise make the operator send signed requests to internal services")
	var clientServiceTypes stringList
	fs.Var(&clientServiceTypes, "client-service-types", "client Service types beyond ClusterIP that EtcdClusters may ask for (NodePort, LoadBalancer — which allocates node ports too; comma-separated or repeated). Default none: a NodePort or LoadBalancer Service exposes etcd outside the Kubernetes cluster, which a tenant who may create EtcdClusters but not Services must not get through the operator (such a cluster is refused with InvalidSpec)")
	var clusterIssuers stringList
	fs.Var(&clusterIssuers, "allowed-cluster-issuers", "cert-manager ClusterIssuers that EtcdClusters may name in spec.tls.issuer.issuerRef (comma-separated or repeated; * for any). Default: none, only an Issuer in the cluster's own namespace: a ClusterIssuer is shared, and every cluster it signs for accepts the client certificates of the others. Any other is refused with ClusterIssuerNotAllowed")
	var priorityClasses stringList
	fs.Var(&priorityClasses, "allowed-priority-classes", "PriorityClasses that EtcdClusters' member pods may run with (comma-separated or repeated). Default: any but Kubernetes' own system- classes (system-cluster-critical, system-node-critical), which preempt nearly everything; with the flag, only the classes it names (system ones included if named). Any other is refused with InvalidSpec")
	allowSvcMetadata := fs.Bool("allow-client-service-metadata", false, "let EtcdClusters put annotations and labels on their client Service; off, such a cluster is refused with InvalidSpec: controllers of the Kubernetes cluster act on Service annotations and labels (exposing it through a tunnel or mesh, publishing DNS), which a tenant who may create EtcdClusters but not Services must not get through the operator")
	maxBackupBytes := fs.Int64("max-backup-bytes", backup.DefaultMaxObjectBytes, "largest backup (stored, and decompressed) this operator reads (it hashes a restore's object, streamed, never stored) and the ephemeral-storage limit of a snapshot check pod; larger ones, and decompression past 100x the stored bytes beyond 1 GiB, are refused (LimitExceeded)")
	backupHashTimeout := fs.Duration("backup-hash-timeout", snapshotcheck.DefaultHashTimeout, "longest the operator's own read of a checked backup (its SHA-256, streamed apart from the reconcile workers) may take; a slower endpoint fails the restore with reason Timeout")
	wh := etcdwebhook.AddServerFlags(fs)
	opts := zap.Options{Development: false}
	opts.BindFlags(fs)
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	if limit, err := softMemoryLimit(os.Getenv); err != nil {
		log.Error(err, "no soft memory limit set: the heap may grow into the container's memory limit")
	} else if limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info("soft memory limit set", "bytes", limit, "of", os.Getenv(memoryLimitEnv))
	}
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

	shard, err := etcdcluster.ParseShard(*shardKey, *shardValue, *shardDefault)
	if err != nil {
		log.Error(err, "bad sharding flags")
		return 2
	}
	if *clusterWorkers < 1 {
		log.Error(fmt.Errorf("--cluster-workers=%d: want at least 1", *clusterWorkers), "bad --cluster-workers")
		return 2
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(etcdv1beta2.AddToScheme(scheme))
	utilruntime.Must(etcdv1.AddToScheme(scheme))
	// cert-manager's Certificates, made for clusters with spec.tls.issuer.issuerRef and
	// watched only where the API server serves them.
	utilruntime.Must(cmv1.AddToScheme(scheme))

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
		LeaderElectionID:        shard.LeaseID("etcd-operator.etcd.database.coreos.com"),
		LeaderElectionNamespace: *leaderElectionNS,
		// The process exits as soon as the manager stops, so a leader that is shut down
		// (pod deleted, rollout, helm upgrade) hands the Lease over at once instead of the
		// standby waiting out the lease duration.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 etcdwebhook.NewServer(wh),
	}
	controllers.ApplyCacheOptions(&mgrOpts, *watchNamespace)

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
		Shard:                     shard,
		AllowAmbientS3Credentials: *allowAmbientS3,
		AllowS3Endpoints:          allowS3Endpoints,
		MaxBackupBytes:            *maxBackupBytes,
		PinKey:                    pinKey,
		ClientServiceTypes:        svcTypes,
		ClientServiceMetadata:     *allowSvcMetadata,
		BackupHashTimeout:         *backupHashTimeout,
		PriorityClasses:           priorityClasses,
		WatchNamespace:            *watchNamespace,
		ClusterIssuers:            clusterIssuers,
		ClusterWorkers:            *clusterWorkers,
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
	log.Info("starting manager", "version", version, "watchNamespace", *watchNamespace, "shard", shard.String(),
		"backupsAndRestores", controllers.RunsBackups(shard))
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager exited with an error")
		return 1
	}
	return 0
}

// memoryLimitEnv names the container's memory limit in bytes, which the install
// manifests pass through the downward API (resourceFieldRef limits.memory).
const memoryLimitEnv = "MEMORY_LIMIT"

// softMemoryLimit is the Go runtime's soft memory limit for a container whose memory
// limit is $MEMORY_LIMIT bytes: 90% of it, so the collector works harder as the heap
// nears the limit instead of the kernel killing the process at it; the tenth left is for
// what the runtime does not count (thread stacks outside the heap, the binary's mapped
// pages). 0 when nothing is to be set: GOMEMLIMIT, when set, is the administrator's
// choice and already applied by the runtime; without MEMORY_LIMIT there is no limit to
// follow. (A container without a memory limit gets the node's allocatable memory from
// the downward API: 90% of that is harmless.)
func softMemoryLimit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	v := getenv(memoryLimitEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes (resourceFieldRef limits.memory)", memoryLimitEnv, v)
	}
	return n - n/10, nil
}

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

// stringList is a repeatable string flag.
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
