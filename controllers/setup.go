// Package controllers wires the operator's reconcilers into a manager: its options, its
// cache settings and the registration of the three controllers, each in a package of
// its own (etcdcluster, etcdbackup, etcdrestore). Each is thin: it observes the API and
// etcd, asks a pure planner for the next step, performs that one step, and writes
// status. The decisions live in internal/planner, the pod shapes in the embedded chart.
package controllers

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/controllers/etcdbackup"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
)

// The metrics endpoint (main.go, --metrics-secure) authenticates each scrape's bearer
// token and authorises it (get on the non-resource URL /metrics) with the API server.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configure the controllers.
type Options struct {
	// ClusterDomain is the cluster's DNS domain; empty means detect it from
	// /etc/resolv.conf and fall back to names without a domain (<pod>.<svc>.<ns>.svc).
	ClusterDomain string
	// OperatorImage is this operator's own image, run by the restore init container of
	// clusters created from a backup and of the first member of a quorum-loss recovery;
	// empty means operatorimage.Default.
	OperatorImage string
	// MinQuorumLossGrace is the shortest quorum-loss grace a cluster may ask for with its
	// annotation; zero means etcdcluster.DefaultMinQuorumLossGrace (1m). The test bench lowers it.
	MinQuorumLossGrace time.Duration
	// ClientServiceTypes are the client Service types beyond ClusterIP that clusters may
	// ask for (etcdcluster.Reconciler.ClientServiceTypes); empty: ClusterIP only.
	ClientServiceTypes []corev1.ServiceType
	// ClientServiceMetadata allows annotations and labels on client Services
	// (etcdcluster.Reconciler.ClientServiceMetadata).
	ClientServiceMetadata bool
	// PriorityClasses are the PriorityClasses member pods may name
	// (etcdcluster.Reconciler.PriorityClasses); empty: any but the system- ones.
	PriorityClasses []string
	// BackupHashTimeout bounds the operator's own read of a checked backup
	// (snapshotcheck.Hasher; zero: snapshotcheck.DefaultHashTimeout).
	BackupHashTimeout time.Duration
	// AllowExternalBackupEndpoints lets an EtcdBackup's spec.etcdEndpoints name etcd
	// outside its namespace; by default a backup reaches only its namespace's clusters.
	AllowExternalBackupEndpoints bool
	// Scope selects, by CoreOS's scope annotation, which EtcdClusters this instance
	// manages; empty means all.
	Scope etcdcluster.Scope
	// Shard selects, by a label or annotation value, which EtcdClusters this instance
	// manages (--shard-key, --shard); the zero Shard means all. In a sharded fleet only
	// the default shard's instance (--shard-default) runs the EtcdBackup and EtcdRestore
	// controllers: those objects are not sharded, and one backup taken by every
	// instance would be taken several times.
	Shard etcdcluster.Shard
	// AllowAmbientS3Credentials lets spec.s3.credentialsSource Environment use the
	// operator's own S3 identity; by default such objects are refused.
	AllowAmbientS3Credentials bool
	// AllowS3Endpoints are S3 endpoints (host or host:port) the operator dials although
	// they are loopback, link-local or the API server's (--allow-s3-endpoint).
	AllowS3Endpoints []string
	// MaxBackupBytes bounds a backup the operator reads in its own process (and its
	// decompressed size); 0: backup.DefaultMaxObjectBytes (--max-backup-bytes).
	MaxBackupBytes int64
	// BackupNowSpacing is the shortest time between two backup-now runs of one
	// EtcdBackup; 0: etcdbackup.DefaultBackupNowSpacing (5m). The e2e tests lower it.
	BackupNowSpacing time.Duration
	// AfterAction is the EtcdCluster controller's test failpoint (etcdcluster.Reconciler's
	// AfterAction); nil in production.
	AfterAction func(ctx context.Context, cluster string, action planner.Action)
	// AfterBackupStored is the EtcdBackup controller's test failpoint (etcdbackup.Reconciler's
	// AfterBackupStored); nil in production.
	AfterBackupStored func(ctx context.Context, backup string, location string)
	// PinKey is the operator's restore-pin key (internal/pinkey): EtcdBackup
	// verifications sign the pins they pass with it, and restores whose pin verifies skip
	// the snapshot checks that verification ran. Nil: nothing is signed or trusted, every
	// restore runs the checks.
	PinKey []byte
	// ClusterIssuers are the cert-manager ClusterIssuers clusters may name
	// (etcdcluster.Reconciler.ClusterIssuers); empty: none, "*": any.
	ClusterIssuers []string
	// WatchNamespace is the one namespace the operator manages (--watch-namespace, also
	// given to ApplyCacheOptions); empty: all.
	WatchNamespace string
	// ClusterWorkers is how many EtcdClusters are reconciled at once (--cluster-workers);
	// zero: etcdcluster.DefaultWorkers.
	ClusterWorkers int
}

// ApplyCacheOptions sets what the manager caches and what its client reads around the
// cache, as the operator runs: only watchNamespace (empty: all), never Secrets, and only
// the objects the operator makes, stripped of what it never reads. main.go and the e2e
// framework's in-process operator both build their managers with it, so end-to-end tests
// run the caches users run; the parts are unexported so that neither can take one
// without the others.
func ApplyCacheOptions(opts *ctrl.Options, watchNamespace string) {
	restrictToNamespace(opts, watchNamespace)
	neverCacheSecrets(opts)
	cacheOnlyOwned(opts)
}

// restrictToNamespace limits the manager's caches to one namespace (empty: all).
func restrictToNamespace(opts *ctrl.Options, namespace string) {
	if namespace == "" {
		return
	}
	opts.Cache.DefaultNamespaces = map[string]cache.Config{namespace: {}}
}

// neverCacheSecrets makes the manager's client read Secrets from the API server on each
// Get: the operator reads only the Secrets a CR names, so it needs (and is granted) no
// list or watch on Secrets, and holds no copy of every Secret in the cluster. Without
// this, the first Get of a Secret through the client would start a cluster-wide informer.
func neverCacheSecrets(opts *ctrl.Options) {
	if opts.Client.Cache == nil {
		opts.Client.Cache = &client.CacheOptions{}
	}
	opts.Client.Cache.DisableFor = append(opts.Client.Cache.DisableFor, &corev1.Secret{})
}

// cacheOnlyOwned makes the manager's informers for pods, claims, Services and
// PodDisruptionBudgets list and watch only the objects the operator makes (labelled
// render.OwnedSelector, which CoreOS's member pods, app=etcd, match too): a tenant's
// other pods, however many and however large, never enter the operator's memory.
// Every cached object is stored without what the operator never reads (stripUnread);
// Nodes, the one kind watched whole (a cordon wakes the clusters on it), also without
// their image lists and volume lists (stripNodeUnread). Reads of objects that may lack
// the label (a pod of the operator's own, a pod an older operator made) go through the
// manager's APIReader, and Secrets are never cached (neverCacheSecrets).
func cacheOnlyOwned(opts *ctrl.Options) {
	if opts.Cache.ByObject == nil {
		opts.Cache.ByObject = map[client.Object]cache.ByObject{}
	}
	sel := render.OwnedSelector()
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		opts.Cache.ByObject[obj] = cache.ByObject{Label: sel}
	}
	opts.Cache.ByObject[&corev1.Node{}] = cache.ByObject{Transform: stripNodeUnread}
	opts.Cache.DefaultTransform = stripUnread
}

// lastApplied is the annotation kubectl apply writes: a second copy of the object as
// last applied (for an EtcdCluster, its whole spec again), which the operator never reads.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// stripUnread drops managedFields and kubectl's last-applied copy from an object before
// the cache stores it. Safe because no cached object is written back whole: the
// operator changes cached objects with merge patches computed against the same
// stripped copy (which leave the dropped fields alone), and the objects it Updates
// (Secrets, Certificates, an EtcdBackup's finalizer) are read from the API server.
func stripUnread(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil {
		// Written only where present, as controller-runtime's own
		// TransformStripManagedFields does.
		if obj.GetManagedFields() != nil {
			obj.SetManagedFields(nil)
		}
		if a := obj.GetAnnotations(); a != nil {
			if _, ok := a[lastApplied]; ok {
				delete(a, lastApplied)
				obj.SetAnnotations(a)
			}
		}
	}
	return in, nil
}

// stripNodeUnread is stripUnread for Nodes, which also lose the lists of images they
// hold and of volumes attached and in use (tens of KiB on a busy node, times every node
// of the Kubernetes cluster). The operator reads a Node's name, labels, taints,
// unschedulable and conditions (observe_cordon.go), nothing else.
func stripNodeUnread(in any) (any, error) {
	if n, ok := in.(*corev1.Node); ok {
		n.Status.Images = nil
		n.Status.VolumesInUse = nil
		n.Status.VolumesAttached = nil
	}
	return stripUnread(in)
}

// s3Access is what every controller lends tenants to reach S3 from the operator's
// process: never the API server's own addresses (those of the manager's rest config and
// of the in-cluster kubernetes Service), besides loopback and link-local.
func s3Access(mgr ctrl.Manager, opts Options) backupstorage.S3Access {
	return backupstorage.S3Access{
		AllowAmbient:   opts.AllowAmbientS3Credentials,
		AllowEndpoints: opts.AllowS3Endpoints,
		DenyAddrs:      apiServerAddrs(mgr.GetConfig().Host, os.Getenv("KUBERNETES_SERVICE_HOST")),
		MaxObjectBytes: opts.MaxBackupBytes,
	}
}

// apiServerAddrs resolves the hosts the API server is reached at (a URL or a host),
// once, at start; names that do not resolve are skipped.
func apiServerAddrs(hosts ...string) []netip.Addr {
	var out []netip.Addr
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			h = u.Hostname()
		} else if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.Trim(h, "[]")
		if a, err := netip.ParseAddr(h); err == nil {
			out = append(out, a.Unmap())
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		cancel()
		if err == nil {
			for _, a := range addrs {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// SetupWithManager registers every controller of the operator.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.ClusterDomain == "" {
		opts.ClusterDomain = detectClusterDomain("/etc/resolv.conf")
	}
	s3 := s3Access(mgr, opts)
	// One Hasher for both controllers that read checked backups: its bounds (two reads
	// per namespace, four in all) hold across them.
	hasher := &snapshotcheck.Hasher{Timeout: opts.BackupHashTimeout}
	if err := (&etcdcluster.Reconciler{
		Client:                mgr.GetClient(),
		Scheme:                mgr.GetScheme(),
		Recorder:              mgr.GetEventRecorderFor("etcd-operator"),
		ClusterDomain:         opts.ClusterDomain,
		OperatorImage:         opts.OperatorImage,
		MinQuorumLossGrace:    opts.MinQuorumLossGrace,
		ClientServiceTypes:    opts.ClientServiceTypes,
		ClientServiceMetadata: opts.ClientServiceMetadata,
		PriorityClasses:       opts.PriorityClasses,
		Scope:                 opts.Scope,
		Shard:                 opts.Shard,
		AfterAction:           opts.AfterAction,
		PinKey:                opts.PinKey,
		WatchNamespace:        opts.WatchNamespace,
		ClusterIssuers:        opts.ClusterIssuers,
		Workers:               opts.ClusterWorkers,
		S3Access:              s3,
		Hasher:                hasher,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if !RunsBackups(opts.Shard) {
		return nil
	}
	if err := (&etcdbackup.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorderFor("etcd-backup"),
		OperatorImage: opts.OperatorImage,
		ClusterDomain: opts.ClusterDomain,

		AllowExternalEndpoints: opts.AllowExternalBackupEndpoints,
		S3Access:               s3,
		AfterBackupStored:      opts.AfterBackupStored,
		PinKey:                 opts.PinKey,
		BackupNowSpacing:       opts.BackupNowSpacing,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&etcdrestore.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorderFor("etcd-restore"),
		OperatorImage: opts.OperatorImage,
		S3Access:      s3,
		Hasher:        hasher,
		PinKey:        opts.PinKey,
		ShardKey:      opts.Shard.Key,
	}).SetupWithManager(mgr)
}

// RunsBackups reports whether an instance of this shard runs the EtcdBackup and
// EtcdRestore controllers: every unsharded instance, and the default shard's of a
// sharded fleet.
func RunsBackups(s etcdcluster.Shard) bool { return !s.Enabled() || s.Default }

// detectClusterDomain reads the search list a kubelet writes into a pod's resolv.conf
// ("<ns>.svc.<domain> svc.<domain> <domain>") and returns <domain>, or "" if absent.
func detectClusterDomain(resolvConf string) string {
	f, err := os.Open(resolvConf)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "search" {
			continue
		}
		for _, d := range fields[1:] {
			if rest, ok := strings.CutPrefix(d, "svc."); ok && rest != "" {
				return strings.TrimSuffix(rest, ".")
			}
		}
	}
	return ""
}
