package etcdbackup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// A backup whose cluster is hibernated (spec.size 0, internal/planner/hibernate.go) has
// nothing to dial, and nothing to save that its last backup before the cluster stopped
// lacks. A due run is skipped, not failed: no failure reason, no back-off, no warning; the
// Skipped condition says why. The run stays due, so it is taken within
// hibernatedRecheck of the cluster coming back (a missed cron slot or interval, a
// backup-now request, a one-shot backup not yet taken).

// hibernatedRecheck is how often a skipped run looks whether its cluster is back: the
// backup controller does not watch EtcdClusters.
const hibernatedRecheck = time.Minute

// hibernatedCluster is the name of the backup's cluster when that cluster is hibernated,
// "" otherwise: the cluster spec.clusterRef names, or the one spec.etcdEndpoints names by
// its DNS names (a hibernated cluster has no pod IP to name it by). Hibernated means spec
// size 0 AND no member pod of it left that may run: the spec alone is not enough, since
// hibernation may be refused (member pods without claims), or the cluster paused or
// mid-restore, and then its pods keep serving and its backups must keep being taken.
func (r *Reconciler) hibernatedCluster(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (string, error) {
	if ref := eb.Spec.ClusterRef; ref != nil {
		var c etcdv1beta2.EtcdCluster
		if err := r.Get(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: ref.Name}, &c); err != nil {
			return "", client.IgnoreNotFound(err) // resolveTarget reports a missing cluster
		}
		return r.stoppedCluster(ctx, &c)
	}
	var clusters etcdv1beta2.EtcdClusterList
	if err := r.List(ctx, &clusters, client.InNamespace(eb.Namespace)); err != nil {
		return "", err
	}
	scope := namespaceClusters{Namespace: eb.Namespace, PodIPs: map[string][]string{}}
	for i := range clusters.Items {
		scope.PodIPs[clusters.Items[i].Name] = nil
	}
	name, err := clusterOfEndpoints(eb.Spec.EtcdEndpoints, scope)
	if err != nil {
		return "", nil
	}
	for i := range clusters.Items {
		if clusters.Items[i].Name == name {
			return r.stoppedCluster(ctx, &clusters.Items[i])
		}
	}
	return "", nil
}

// stoppedCluster is c's name when its spec hibernates it and none of its member pods is
// left that runs or may yet run (one being deleted, or finished, never serves again); ""
// otherwise.
func (r *Reconciler) stoppedCluster(ctx context.Context, c *etcdv1beta2.EtcdCluster) (string, error) {
	if !c.Spec.Hibernates() {
		return "", nil
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return "", err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if metav1.IsControlledBy(p, c) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return "", nil
		}
	}
	return c.Name, nil
}

// skipHibernated records a due run skipped for its hibernated cluster; the same skip again
// writes nothing.
func (r *Reconciler) skipHibernated(s *scope, cluster string) ctrl.Result {
	eb := s.eb
	// Not an attempt: etcd_operator_backups_total counts none, so EtcdBackupFailing and
	// EtcdBackupTooOld see no failure; the gauge tells them to leave the backup alone.
	// Set on every skip, not only the first, so a restarted operator exports it again.
	backupSkipped.WithLabelValues(eb.Namespace, eb.Name).Set(1)
	msg := fmt.Sprintf("EtcdCluster %s is hibernated (spec.size 0): its members are stopped, so the due backup is skipped; it runs once the cluster is back", cluster)
	if meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.BackupConditionSkipped, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonClusterHibernated,
		Message: msg, ObservedGeneration: eb.Generation,
	}) {
		s.write = true
		s.events = append(s.events, pendingEvent{corev1.EventTypeNormal, etcdv1beta2.EventReasonBackupSkipped, msg})
	}
	return ctrl.Result{RequeueAfter: hibernatedRecheck}
}

// clearSkipped removes the Skipped condition once a run is attempted again; it reports
// whether there was one.
func clearSkipped(eb *etcdv1beta2.EtcdBackup) bool {
	if !meta.RemoveStatusCondition(&eb.Status.Conditions, etcdv1beta2.BackupConditionSkipped) {
		return false
	}
	backupSkipped.WithLabelValues(eb.Namespace, eb.Name).Set(0)
	return true
}
