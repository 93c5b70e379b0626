package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Moving members off cordoned nodes, part of the rollout rule (reconfigure.go). A node drain
// cordons the node, then evicts its pods through the Eviction API, which the
// PodDisruptionBudget may refuse (a one-member cluster, or a member already missing).
// So that a drain neither waits forever nor takes redundancy away, a voter whose pod
// (Drift.LeaveNode) is on a cordoned node is renewed like a drifted one, always through
// a learner (wayReplace), even with a claim: a claim on a node-local volume cannot
// follow the member to another node, and a pod recreated on it would wait for the
// cordon to be lifted. The learner's pod lands on another node (the scheduler skips
// cordoned ones), the in-flight rule promotes it once caught up, and the scale-down rule then removes the
// member on the cordoned node (moving leadership first if it leads), deleting its pod
// and claim only once the new member votes. The rollout rule's own limits hold: one member at a
// time, only while every member is healthy and Ready, nothing while paused.
//
// When the controller found no other schedulable node for the new member's pod
// (Observed.NoNodeToLeaveTo), nothing is moved: a learner nobody can schedule would
// only be abandoned again. The cluster waits and says why.

// movesOffNode reports that p's member is moved off a cordoned node through a learner.
func (v *view) movesOffNode(p *Pod) bool {
	return p != nil && p.Drift.LeaveNode != "" && !v.o.NoNodeToLeaveTo
}

// leaveNodeAction adds the learner that replaces m, whose pod is on a cordoned node.
func (v *view) leaveNodeAction(m *Member) Action {
	name := NewMemberNames(v.d.ClusterName, v.o.nameSeed(), 1, v.usedNames())[0]
	return Action{Kind: AddLearner, Name: name, Version: v.newMemberVersion(), Reason: v1beta2.ReasonLeavingCordonedNode,
		Message: fmt.Sprintf("adding learner %s on another node to replace %s, whose node %s is cordoned (add before remove)",
			name, m.Name, v.podOf[m.ID].Drift.LeaveNode)}
}

// stuckOnCordonedNode is the rollout rule's answer when no member is to be renewed: a Wait that
// names the voters left on cordoned nodes because no other node could take them.
func (v *view) stuckOnCordonedNode() (Action, bool) {
	if !v.o.NoNodeToLeaveTo {
		return Action{}, false
	}
	var stuck []string
	for _, m := range v.voters {
		if p := v.podOf[m.ID]; p != nil && p.Drift.LeaveNode != "" {
			stuck = append(stuck, fmt.Sprintf("%s (node %s)", m.Name, p.Drift.LeaveNode))
		}
	}
	if len(stuck) == 0 {
		return Action{}, false
	}
	sort.Strings(stuck)
	return wait(v1beta2.ReasonNoNodeToLeaveTo, fmt.Sprintf("not moving %s off a cordoned node: no other Ready, schedulable node can take a new member",
		strings.Join(stuck, ", ")), requeueLong), true
}
