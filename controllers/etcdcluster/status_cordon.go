package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// reportCordon sets OffCordonedNodes (cordonCondition).
func (r *Reconciler) reportCordon(c *etcdv1beta2.EtcdCluster, o *observation, now string) {
	u := cordonCondition(o)
	if u.Status && findCondition(c, u.Type) == nil {
		// A cluster that never had a member on a cordoned node gets no such condition.
		return
	}
	r.setCondition(c, u, now)
}

// cordonCondition is OffCordonedNodes from the observation: which member pods are on
// cordoned nodes, and whether they can move (internal/planner/cordon.go). Being stuck
// (NoNodeToLeaveTo) is a failure, announced per set of pods; it is over once no member
// is on a cordoned node.
func cordonCondition(o *observation) conditionUpdate {
	leaving := leavingPods(o)
	if len(leaving) == 0 {
		return conditionUpdate{Type: etcdv1beta2.ClusterConditionOffCordonedNodes, Status: true, Reason: etcdv1beta2.ReasonNoMemberOnCordonedNode,
			Message: "no member pod runs on a cordoned node", Recovered: true}
	}
	u := conditionUpdate{Type: etcdv1beta2.ClusterConditionOffCordonedNodes, Reason: etcdv1beta2.ReasonLeavingCordonedNode,
		Message: fmt.Sprintf("member pods on cordoned nodes: %s; each is replaced by a new member on another node, one at a time (added and promoted before the old one is removed)",
			strings.Join(leaving, ", "))}
	if o.planner.NoNodeToLeaveTo {
		u.Reason = etcdv1beta2.ReasonNoNodeToLeaveTo
		u.Message = fmt.Sprintf("member pods on cordoned nodes: %s; no other Ready, schedulable node can take a new member (node selector, taints, anti-affinity), so they stay and a drain of their node waits on the PodDisruptionBudget",
			strings.Join(leaving, ", "))
		u.Fail = u.Reason + ":" + strings.Join(leaving, ",")
	}
	return u
}

// leavingPods names the member pods on cordoned nodes as "pod (node)", sorted.
func leavingPods(o *observation) []string {
	var out []string
	for _, p := range o.planner.Pods {
		if p.Drift.LeaveNode != "" {
			out = append(out, fmt.Sprintf("%s (node %s)", p.Name, p.Drift.LeaveNode))
		}
	}
	sort.Strings(out)
	return out
}
