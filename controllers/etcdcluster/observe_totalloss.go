package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch

// What the planner needs to judge a total loss (internal/planner/totalloss.go): since
// when nothing of the cluster has been left, and the newest backup it could restore.

// lossClock remembers, per cluster (and UID), when the controller first saw nothing of
// it left. It is in memory on purpose: a restarted operator starts the grace again,
// which only ever delays a restore.
type lossClock struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// observe records now as the start of the loss if lost and none is recorded, forgets
// it when not lost, and returns the recorded start (zero when not lost).
func (l *lossClock) observe(key string, lost bool, now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since == nil {
		l.since = map[string]time.Time{}
	}
	if !lost {
		delete(l.since, key)
		return time.Time{}
	}
	if _, ok := l.since[key]; !ok {
		l.since[key] = now
	}
	return l.since[key]
}

// observeTotalLoss fills AllLostSince, Backup and BackupProblems of the planner's view.
// Nothing is left when no member answered and no pod or claim labelled as the cluster's
// exists in any state, read fresh from the API server and whoever controls it: a pod or
// claim the cluster does not control could still hold a member's data. Once a restore
// is recorded, the loss is no longer timed nor backups listed (the planner asks neither
// of a recorded restore); what its member's restore step did is read instead.
func (r *Reconciler) observeTotalLoss(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation) error {
	p := &o.planner
	if rec := c.Status.BackupRestore; rec.InProgress() {
		if p.BackupRestore != nil {
			p.BackupRestore.StepStarted, p.BackupRestore.StepDoneAt = restoreStepProgress(o.pods[rec.Member])
		}
		return nil
	}
	lost := p.Bootstrapped && (!p.MembersKnown || len(p.Members) == 0) && len(p.Pods) == 0 && len(p.Claims) == 0
	if lost {
		left, err := r.anythingLabelled(ctx, c)
		if err != nil {
			return err
		}
		lost = !left
	}
	key := clusterKey(c) + "/" + string(c.UID)
	p.AllLostSince = r.loss.observe(key, lost, p.Now)
	if !lost {
		r.lostBackups.forget(key)
		return nil
	}
	found := r.listLostBackups(ctx, c, p.Now)
	for _, msg := range found.problems {
		log.FromContext(ctx).Info("backup not usable for a total-loss restore", "problem", msg)
	}
	p.Backup, p.BackupProblems = found.newest, found.problems
	return nil
}

// anythingLabelled reads, from the API server, whether any pod or claim carries the
// cluster's labels.
func (r *Reconciler) anythingLabelled(ctx context.Context, c *etcdv1beta2.EtcdCluster) (bool, error) {
	rd := r.apiReader()
	sel := client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}
	var pods corev1.PodList
	if err := rd.List(ctx, &pods, client.InNamespace(c.Namespace), sel); err != nil {
		return false, fmt.Errorf("list pods: %w", err)
	}
	var claims corev1.PersistentVolumeClaimList
	if err := rd.List(ctx, &claims, client.InNamespace(c.Namespace), sel); err != nil {
		return false, fmt.Errorf("list claims: %w", err)
	}
	return len(pods.Items) > 0 || len(claims.Items) > 0, nil
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// backupObject is one object an EtcdBackup wrote, as listed: named like its objects,
// its metadata not read yet (backupselect.DescribeOwn does before any use).
type backupObject struct {
	backup   *etcdv1beta2.EtcdBackup
	src      backupselect.Source
	key      string
	path     string // "<bucket>/<key>"
	revision int64  // from the object's name, else its metadata or the EtcdBackup's status
	at       time.Time
	// verified: the EtcdBackup's status says this object passed a verification (same
	// key and revision). Only a preference: the object is checked again before use.
	verified bool
}

// backupObjects lists, in the order they are tried, the objects written by the
// EtcdBackups of the cluster's namespace that target it (restricted to the one the opt-in
// annotation names, if it names one), and says why other EtcdBackups were passed over.
// Objects that passed a backup verification come first, newest first, then the others:
// a restore from a backup that was seen to restore is preferred to a newer one that was
// only checksummed.
func (r *Reconciler) backupObjects(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]backupObject, []string) {
	var list etcdv1beta2.EtcdBackupList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, []string{fmt.Sprintf("list EtcdBackups: %v", err)}
	}
	clusters, err := r.clusterNames(ctx, c)
	if err != nil {
		return nil, []string{fmt.Sprintf("list EtcdClusters: %v", err)}
	}
	only := restoreFromBackupName(c)
	var out []backupObject
	var problems []string
	for i := range list.Items {
		eb := &list.Items[i]
		if only != "" && eb.Name != only || !backupTargets(eb, c, clusters) {
			continue
		}
		objs, err := r.objectsOf(ctx, eb)
		if err != nil {
			problems = append(problems, fmt.Sprintf("EtcdBackup %s: %v", eb.Name, err))
			continue
		}
		out = append(out, objs...)
	}
	sortCandidates(out)
	return out, problems
}

// sortCandidates orders restore candidates: verified objects first, then newest first
// (by time, then revision).
func sortCandidates(out []backupObject) {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].verified != out[j].verified {
			return out[i].verified
		}
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.After(out[j].at)
		}
		return out[i].revision > out[j].revision
	})
}

// objectsOf lists what one S3 EtcdBackup wrote, as internal/backupselect lists it (its
// periodic backups and the object at its exact key, only those whose metadata names
// this EtcdBackup: two EtcdBackups writing the same prefix never restore each other's
// objects). PVC backups cannot be read by the operator and are not candidates.
func (r *Reconciler) objectsOf(ctx context.Context, eb *etcdv1beta2.EtcdBackup) ([]backupObject, error) {
	if eb.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 || eb.Spec.S3 == nil {
		return nil, fmt.Errorf("storage type %q: only S3 backups can be restored after total loss", eb.Spec.StorageType)
	}
	bucket, key, err := backup.SplitS3Path(eb.Spec.S3.Path)
	if err != nil {
		return nil, err
	}
	store, err := r.S3Access.OpenFor(ctx, r.apiReader(), eb.Namespace, eb.Name, eb.Spec.S3, bucket)
	if err != nil {
		return nil, err
	}
	src := backupselect.Source{Store: store, Key: key, Namespace: eb.Namespace, Name: eb.Name}
	entries, err := backupselect.List(ctx, src)
	if err != nil {
		return nil, err
	}
	out := make([]backupObject, 0, len(entries))
	for _, e := range entries {
		rev := e.Revision
		if e.Key == key && rev == 0 {
			rev = eb.Status.EtcdRevision // a one-shot object without the revision in its metadata
		}
		out = append(out, backupObject{backup: eb, src: src, key: e.Key, path: bucket + "/" + e.Key, revision: rev, at: e.Time,
			verified: verifiedObject(eb, e.Key, rev)})
	}
	return out, nil
}

// verifiedObject: eb's status records that the object key at revision passed a
// verification, as its last one or in its list of holdings.
func verifiedObject(eb *etcdv1beta2.EtcdBackup, key string, revision int64) bool {
	if eb.Status.LastVerifiedKey == key && eb.Status.LastVerifiedRevision == revision {
		return true
	}
	for _, b := range eb.Status.Backups {
		if b.Key == key && b.Revision == revision && b.Verified {
			return true
		}
	}
	return false
}

// restoreFromBackupName is the EtcdBackup the opt-in names; "" when it allows any.
func restoreFromBackupName(c *etcdv1beta2.EtcdCluster) string {
	v := strings.TrimSpace(c.Annotations[etcdv1beta2.AnnotationAllowRestoreFromBackup])
	if v == "true" {
		return ""
	}
	return v
}

// restoreFromBackupAllowed: the cluster carries the opt-in ("true" or an EtcdBackup's name).
func restoreFromBackupAllowed(c *etcdv1beta2.EtcdCluster) bool {
	v := strings.TrimSpace(c.Annotations[etcdv1beta2.AnnotationAllowRestoreFromBackup])
	return v != "" && v != "false"
}

// backupTargets: the EtcdBackup backs up c, named by spec.clusterRef or, as in CoreOS's
// API, by spec.etcdEndpoints that name c's Services or members in its namespace and no
// other of the namespace's clusters.
func backupTargets(eb *etcdv1beta2.EtcdBackup, c *etcdv1beta2.EtcdCluster, clusters map[string]bool) bool {
	if eb.Namespace != c.Namespace {
		return false
	}
	if eb.Spec.ClusterRef != nil {
		return eb.Spec.ClusterRef.Name == c.Name
	}
	return len(eb.Spec.EtcdEndpoints) > 0 && backuptarget.ClusterOfNames(eb.Spec.EtcdEndpoints, c.Namespace, clusters) == c.Name
}

// clusterNames are the names of the EtcdClusters of c's namespace.
func (r *Reconciler) clusterNames(ctx context.Context, c *etcdv1beta2.EtcdCluster) (map[string]bool, error) {
	var list etcdv1beta2.EtcdClusterList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, err
	}
	names := map[string]bool{c.Name: true}
	for i := range list.Items {
		names[list.Items[i].Name] = true
	}
	return names, nil
}
