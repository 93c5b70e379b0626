package etcdcluster

import (
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// reportFork sets the Forked condition from the plan (forkedCondition); absent until a
// fork was first seen.
func (r *Reconciler) reportFork(c *etcdv1beta2.EtcdCluster, a planner.Action, now string) {
	if u, ok := forkedCondition(a, findCondition(c, etcdv1beta2.ClusterConditionForked) != nil); ok {
		r.setCondition(c, u, now)
	}
}

// forkedCondition is Forked: True while the planner waits on a fork (planner.DetectFork
// past planner.ForkSettle), a failure announced once; False once the members agree
// again, when the condition exists (had). A disagreement still settling
// (MembershipUnsettled), or a paused cluster, leaves it as it is (ok false).
func forkedCondition(a planner.Action, had bool) (conditionUpdate, bool) {
	switch {
	case a.Kind == planner.Wait && a.Reason == etcdv1beta2.ReasonForked:
		return conditionUpdate{Type: etcdv1beta2.ClusterConditionForked, Status: true, Reason: etcdv1beta2.ReasonForked, Message: a.Message,
			Fail: etcdv1beta2.ReasonForked}, true
	case a.Kind == planner.Wait && (a.Reason == etcdv1beta2.ReasonMembershipUnsettled || a.Reason == etcdv1beta2.ReasonPaused):
		return conditionUpdate{}, false
	case had:
		return conditionUpdate{Type: etcdv1beta2.ClusterConditionForked, Reason: etcdv1beta2.ReasonNotForked,
			Message: "every answering member agrees on the cluster ID and the membership", Recovered: true}, true
	}
	return conditionUpdate{}, false
}
