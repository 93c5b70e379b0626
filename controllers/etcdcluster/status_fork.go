package etcdcluster

import (
	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// reportFork sets the Forked condition from the plan: True while the planner waits on a
// fork (planner.DetectFork past planner.ForkSettle), with a warning event when it turns
// True; False once the members agree again. Absent until a fork was first seen; a
// disagreement still settling (MembershipUnsettled) leaves it as it is.
func (r *Reconciler) reportFork(c *etcdv1beta2.EtcdCluster, a planner.Action, now string) {
	switch {
	case a.Kind == planner.Wait && a.Reason == etcdv1beta2.ReasonForked:
		flipped, added := updateCondition(c, etcdv1beta2.ClusterConditionForked, true, etcdv1beta2.ReasonForked, a.Message, now)
		if flipped || added {
			r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonForked, a.Message)
		}
	case a.Kind == planner.Wait && (a.Reason == etcdv1beta2.ReasonMembershipUnsettled || a.Reason == etcdv1beta2.ReasonPaused):
	case findCondition(c, etcdv1beta2.ClusterConditionForked) != nil: // status_alarms.go
		msg := "every answering member agrees on the cluster ID and the membership"
		if flipped, _ := updateCondition(c, etcdv1beta2.ClusterConditionForked, false, etcdv1beta2.ReasonNotForked, msg, now); flipped {
			r.Recorder.Event(c, corev1.EventTypeNormal, etcdv1beta2.ReasonNotForked, msg)
		}
	}
}
