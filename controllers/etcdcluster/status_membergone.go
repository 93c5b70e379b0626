package etcdcluster

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// reportGoneMembers takes out of status.members.ready, and writes at once, every member
// status counts Ready whose pod is gone from the cache or being deleted. The rest of the
// observation asks etcd, and after a member that led is gone those calls wait out the
// election (the linearizable member list, up to 5 s): a user (or an alert on
// etcd_operator_cluster_members{state="ready"}) must not see a dead member as Ready for
// that long. Nothing is written when no Ready member's pod went, so a cluster at rest or
// being created costs no extra request; the flush then writes the full status as usual.
// A failed write only delays the report to the flush, so it is logged, not returned.
func (r *Reconciler) reportGoneMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods map[string]*corev1.Pod, w *statusWriter) {
	gone := goneReadyMembers(c.Status.Members.Ready, pods)
	if len(gone) == 0 || w == nil {
		return
	}
	// c's status is the reconcile's own copy (the writer diffs it against a deep copy).
	c.Status.Members.Ready = slices.DeleteFunc(c.Status.Members.Ready, func(n string) bool { return slices.Contains(gone, n) })
	for _, n := range gone {
		if !slices.Contains(c.Status.Members.Unready, n) {
			c.Status.Members.Unready = append(c.Status.Members.Unready, n)
		}
	}
	if slices.Contains(gone, c.Status.Members.Leader) {
		c.Status.Members.Leader = ""
	}
	if err := w.checkpoint(ctx); err != nil {
		log.FromContext(ctx).V(1).Info("members whose pods went not reported before asking etcd", "members", gone, "err", err.Error())
		return
	}
	log.FromContext(ctx).V(1).Info("members whose pods went reported not Ready", "members", gone)
}

// goneReadyMembers are the names in ready whose pod is absent from pods or has a deletion
// timestamp.
func goneReadyMembers(ready []string, pods map[string]*corev1.Pod) []string {
	var gone []string
	for _, n := range ready {
		if p, ok := pods[n]; !ok || !p.DeletionTimestamp.IsZero() {
			gone = append(gone, n)
		}
	}
	return gone
}
