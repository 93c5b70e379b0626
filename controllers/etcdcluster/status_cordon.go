package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// reportCordon sets OffCordonedNodes from the observation: which member pods are on
// cordoned nodes, and whether they can move (internal/planner/cordon.go). A cluster that
// never had a member on a cordoned node gets no such condition. Being stuck is
// announced with a warning event, and its end with a normal one.
func (r *Reconciler) reportCordon(c *etcdv1beta2.EtcdCluster, o *observation, now string) {
	leaving := leavingPods(o)
	if len(leaving) == 0 {
		if findCondition(c, etcdv1beta2.ClusterConditionOffCordonedNodes) != nil {
			updateCondition(c, etcdv1beta2.ClusterConditionOffCordonedNodes, true, etcdv1beta2.ReasonNoMemberOnCordonedNode,
				"no member pod runs on a cordoned node", now)
		}
		r.announce(c, etcdv1beta2.ClusterConditionOffCordonedNodes, "", true, etcdv1beta2.ReasonNoMemberOnCordonedNode, "no member pod runs on a cordoned node")
		return
	}
	reason := etcdv1beta2.ReasonLeavingCordonedNode
	msg := fmt.Sprintf("member pods on cordoned nodes: %s; each is replaced by a new member on another node, one at a time (added and promoted before the old one is removed)",
		strings.Join(leaving, ", "))
	failKey := ""
	if o.planner.NoNodeToLeaveTo {
		reason = etcdv1beta2.ReasonNoNodeToLeaveTo
		msg = fmt.Sprintf("member pods on cordoned nodes: %s; no other Ready, schedulable node can take a new member (node selector, taints, anti-affinity), so they stay and a drain of their node waits on the PodDisruptionBudget",
			strings.Join(leaving, ", "))
		failKey = reason + ":" + strings.Join(leaving, ",")
	}
	updateCondition(c, etcdv1beta2.ClusterConditionOffCordonedNodes, false, reason, msg, now)
	r.announce(c, etcdv1beta2.ClusterConditionOffCordonedNodes, failKey, false, reason, msg)
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
