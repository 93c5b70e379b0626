package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
)

// A total-loss restore's candidates are checked one at a time in a snapshot check pod
// (internal/snapshotcheck: the operator's image, bounded, in the cluster's namespace,
// owned by the cluster so its changes wake the cluster), never in the operator's
// process; a passed check counts only once the operator's own read of the object (apart
// from the workers: snapshotcheck.Hasher) has the SHA-256 the pod reported, and the restore is pinned to that SHA-256. The outcome of
// each object's check is kept in memory while the cluster is lost (lostBackupCache.forget
// drops it), so a failed candidate is passed over, not checked again each reconcile.

// backupCheckSuffix names a cluster's check pod <cluster>-backup-check.
const backupCheckSuffix = "backup-check"

// backupCheckPending: a candidate's check pod runs. Not a failure: the reconcile looks
// again after `after` (or when the pod changes).
type backupCheckPending struct {
	msg   string
	after time.Duration
}

func (p *backupCheckPending) Error() string { return p.msg }

// checkedBackup is a finished check of one object: its SHA-256 as the operator read it
// and the revision the check read from the snapshot, or why it failed.
type checkedBackup struct {
	sha      string
	revision int64
	err      error
}

// backupChecks keeps the finished checks per lost cluster (namespace/name/UID), by path.
type backupChecks struct {
	mu   sync.Mutex
	done map[string]map[string]checkedBackup
}

func (b *backupChecks) get(cluster, path string) (checkedBackup, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.done[cluster][path]
	return r, ok
}

func (b *backupChecks) put(cluster, path string, r checkedBackup) {
	b.mu.Lock()
	defer b.mu.Unlock()
	innerMap(&b.done, cluster)[path] = r
}

// innerMap is (*m)[k], made (and *m with it) where it is missing.
func innerMap[K1, K2 comparable, V any](m *map[K1]map[K2]V, k K1) map[K2]V {
	if *m == nil {
		*m = map[K1]map[K2]V{}
	}
	if (*m)[k] == nil {
		(*m)[k] = map[K2]V{}
	}
	return (*m)[k]
}

func (b *backupChecks) forget(cluster string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.done, cluster)
}

// forgetCluster drops the checks of every UID of cluster (namespace/name).
func (b *backupChecks) forgetCluster(cluster string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	deleteCluster(b.done, cluster)
}

// checkCandidate returns the SHA-256 and revision of candidate b once its check passed,
// a *backupCheckPending while its pod runs, or why it cannot be restored from.
func (r *Reconciler) checkCandidate(ctx context.Context, c *etcdv1beta2.EtcdCluster, b backupObject) (string, int64, error) {
	cluster := clusterKey(c) + "/" + string(c.UID)
	if done, ok := r.lostBackups.checks.get(cluster, b.path); ok {
		return done.sha, done.revision, done.err
	}
	s3 := b.backup.Spec.S3.DeepCopy()
	s3.Path = b.path
	spec := snapshotcheck.Spec(render.SnapshotCheckPodName(c.Name, backupCheckSuffix), c.Namespace, c.Name, r.OperatorImage, s3, r.S3Access.MaxObjectBytes)
	loc := "s3://" + b.path
	var pod corev1.Pod
	err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: spec.Name}, &pod)
	switch {
	case apierrors.IsNotFound(err):
		return "", 0, r.startBackupCheck(ctx, c, spec, loc)
	case err != nil:
		return "", 0, err
	case !metav1.IsControlledBy(&pod, c):
		return "", 0, fmt.Errorf("pod %s/%s exists and is not this cluster's snapshot check; backups are checked once it is gone", pod.Namespace, pod.Name)
	case pod.DeletionTimestamp != nil:
		return "", 0, &backupCheckPending{msg: "waiting for the earlier snapshot check pod " + pod.Name + " to be gone", after: time.Second}
	case !snapshotcheck.Is(&pod, spec):
		// Of another candidate, or not as the operator rendered it: never read.
		if err := r.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return "", 0, err
		}
		return "", 0, &backupCheckPending{msg: "replacing the snapshot check pod " + pod.Name, after: time.Second}
	}
	now := r.Now()
	deadline := snapshotcheck.Deadline(&pod, spec)
	res, finished := snapshotcheck.Outcome(&pod, !now.Before(deadline))
	if !finished {
		return "", 0, &backupCheckPending{msg: fmt.Sprintf("checking backup %s in pod %s", loc, pod.Name), after: deadline.Sub(now)}
	}
	// The operator's own read of the object runs apart from the workers (a tenant's
	// slow-drip endpoint holds none of them); the pod stays until it is done.
	// The id names the check pod, whose report the read confirms (a read left from a
	// pod deleted before its result was taken pairs with no other pod's report).
	_, sum, err := r.Hasher.Confirm(ctx, cluster+"/"+string(pod.UID)+"/"+b.path, b.src.Store, b.key, loc, res)
	if hp, ok := errors.AsType[*snapshotcheck.HashPending](err); ok {
		return "", 0, &backupCheckPending{msg: hp.Error(), after: hp.After}
	}
	if be, ok := err.(*backupstorage.Error); ok {
		err = be.Err // the reason is the planner's to give (AllMembersLost)
	}
	// The revision the check read from the snapshot (as the restore step would): for
	// messages and the record only; the SHA-256 is what pins the restore.
	rev := res.Revision
	if rev == 0 {
		rev = b.revision
	}
	r.lostBackups.checks.put(cluster, b.path, checkedBackup{sha: sum, revision: rev, err: err})
	if derr := r.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(derr) != nil {
		log.FromContext(ctx).Info("could not delete the snapshot check pod", "pod", pod.Name, "error", derr.Error())
	}
	return sum, rev, err
}

// startBackupCheck creates the check pod of one candidate.
func (r *Reconciler) startBackupCheck(ctx context.Context, c *etcdv1beta2.EtcdCluster, spec render.SnapshotCheckSpec, loc string) error {
	pod, err := render.SnapshotCheckPod(spec)
	if err != nil {
		return err
	}
	pod.Annotations = map[string]string{snapshotcheck.AnnotationStarted: r.Now().UTC().Format(time.RFC3339)}
	if err := controllerutil.SetControllerReference(c, pod, r.Scheme); err != nil {
		return err
	}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the snapshot check pod: %w", err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonRestoringFromBackup, "checking backup %s in pod %s before restoring from it", loc, pod.Name)
	return &backupCheckPending{msg: fmt.Sprintf("checking backup %s in pod %s", loc, pod.Name), after: spec.Deadline + snapshotcheck.DeadlineSlack}
}
