package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The rollout rule: rolling reconfiguration. Member pods created from an older spec (their
// Drift, which the controller derives from the spec fingerprint on each pod) are moved
// onto the current spec one member at a time, with the upgrade's safety. It runs only
// where the upgrade rule found nothing to upgrade (Done) or refused the upgrade, so the cluster
// is fully healthy, at full size, with nothing in flight:
//   - a voter that answers but names no leader, or whose pod is not Ready → Wait: the
//     health gate between two steps, as between two upgrade restarts.
//   - pod metadata only (spec.pod labels or annotations) → PatchPodMetadata, any
//     member, the leader too: nothing restarts.
//   - a change only a new pod gets, while some pod has a held field (TLS secrets,
//     cluster domain: a new pod would take them up, which needs steps of its own) →
//     Wait(ReconfigureHeld); nothing is restarted.
//   - a change only a new pod gets, followers first by name, the leader last after
//     MoveLeader to a voter already on the current spec:
//   - with a data claim, in a cluster that keeps its quorum without the member →
//     DeletePod (KeepClaim): the recreate rule gives the member its pod back on its claim, same
//     name, ID and data, rendered from the current spec;
//   - otherwise (no claim, or one or two voters, which lose quorum when one restarts)
//     → AddLearner under a new name; the in-flight rule keeps that learner and promotes it once
//     caught up (learnerReplacesDrifted), and the scale-down rule then removes a drifted voter,
//     moving leadership off it first (scaledown.go): add before remove, so redundancy
//     never drops.
//
// Nothing here is recorded in status: which pods are drifted is read from the pods at
// every plan, so an operator restarted at any point resumes from what it observes.

// driftWay is how a member is moved onto the current spec.
type driftWay int

const (
	wayNone     driftWay = iota // on the current spec, or differs only in ways not rolled out
	wayMetadata                 // labels/annotations: patched in place
	wayRecreate                 // a new pod on its claim, same member
	wayReplace                  // a new member through a learner, then the old one removed
)

// way is how m is moved onto the current spec.
func (v *view) way(m *Member) driftWay {
	p := v.podOf[m.ID]
	switch {
	case p == nil:
		return wayNone
	case v.movesOffNode(p):
		return wayReplace
	case (p.Drift.NewPod || p.Drift.TLS) && v.hasClaim(m.Name) && v.aliveVoters-1 >= Quorum(len(v.voters)):
		return wayRecreate
	case p.Drift.NewPod || p.Drift.TLS:
		return wayReplace
	case p.Drift.Metadata:
		return wayMetadata
	}
	return wayNone
}

// heldFields are the fields, over all pods, whose change a new pod would take up but
// which cannot be rolled out yet; while there are any, no member is restarted.
func (v *view) heldFields() []string {
	seen := map[string]bool{}
	var out []string
	for i := range v.o.Pods {
		for _, f := range v.o.Pods[i].Drift.Held {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sort.Strings(out)
	return out
}

// planReconfigure is the rollout rule (see above).
func (v *view) planReconfigure() (Action, bool) {
	if a, held := v.tlsGate(); held { // tls.go
		return a, true
	}
	if a, ok := v.planTLSEnable(); ok { // tlsenable.go
		return a, true
	}
	var meta, renew []*Member
	for _, m := range v.voters {
		switch v.way(m) {
		case wayMetadata:
			meta = append(meta, m)
		case wayRecreate, wayReplace:
			renew = append(renew, m)
		}
	}
	if len(meta)+len(renew) == 0 {
		return v.stuckOnCordonedNode() // cordon.go
	}
	if a, waiting := v.reconfigureGate(); waiting {
		return a, true
	}
	byName := func(ms []*Member) {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	}
	byName(meta)
	if len(meta) > 0 {
		m := meta[0]
		return Action{Kind: PatchPodMetadata, ID: m.ID, Name: m.Name, Reason: v1beta2.ReasonReconfiguring,
			Message: fmt.Sprintf("putting %s on pod %s in place (no restart)", strings.Join(v.podOf[m.ID].Drift.Fields, ", "), m.Name)}, true
	}
	if held := v.heldFields(); len(held) > 0 {
		return wait(v1beta2.ReasonReconfigureHeld, fmt.Sprintf("not restarting members for the new spec while %s changed: a new pod would take that up, which needs steps of its own",
			strings.Join(held, ", ")), requeueLong), true
	}
	byName(renew)
	m := renew[0]
	for _, r := range renew {
		if r != v.leader {
			m = r
			break
		}
	}
	if m == v.leader && len(v.voters) > 1 && v.way(m) == wayRecreate {
		return v.moveLeaderOffDrifted(m)
	}
	return v.renewAction(m), true
}

// reconfigureGate is the health gate between two steps of a rollout: every voter
// follows the leader and its pod is Ready, so the client Service and the
// PodDisruptionBudget count it again before the next member goes down.
func (v *view) reconfigureGate() (Action, bool) {
	for _, m := range v.voters {
		if m.LeaderUnknown {
			return wait(v1beta2.ReasonReconfigureInProgress, fmt.Sprintf("waiting for %s to rejoin the leader before the next member is reconfigured", m.Name), requeueShort), true
		}
		if p := v.podOf[m.ID]; p != nil && !p.Ready {
			return wait(v1beta2.ReasonReconfigureInProgress, fmt.Sprintf("waiting for pod %s to be Ready before the next member is reconfigured", p.Name), requeueShort), true
		}
	}
	return Action{}, false
}

// moveLeaderOffDrifted moves leadership from the leader, the last member to recreate,
// to a voter already on the current spec (one election instead of two).
func (v *view) moveLeaderOffDrifted(leader *Member) (Action, bool) {
	to := v.leaderTarget(leader, nil, v.drifted())
	if to == nil {
		return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before reconfiguring the leader", requeueShort), true
	}
	return Action{Kind: MoveLeader, From: leader.ID, To: to.ID, Reason: v1beta2.ReasonReconfiguring,
		Message: fmt.Sprintf("moving leadership from %s to %s before recreating %s on the current spec", leader.Name, to.Name, leader.Name)}, true
}

// renewAction moves m onto the current spec with a new pod: on its claim, or through
// a new member.
func (v *view) renewAction(m *Member) Action {
	fields := strings.Join(v.podOf[m.ID].Drift.Fields, ", ")
	if v.movesOffNode(v.podOf[m.ID]) {
		return v.leaveNodeAction(m) // cordon.go
	}
	if v.way(m) == wayRecreate {
		return Action{Kind: DeletePod, Name: m.Name, ID: m.ID, KeepClaim: true, Reason: v1beta2.ReasonReconfiguring,
			Message: fmt.Sprintf("recreating pod %s on its claim for the new %s (same member, same data)", m.Name, fields)}
	}
	name := NewMemberNames(v.d.ClusterName, v.o.nameSeed(), 1, v.usedNames())[0]
	return Action{Kind: AddLearner, Name: name, Version: v.newMemberVersion(), Reason: v1beta2.ReasonReconfiguring,
		Message: fmt.Sprintf("adding learner %s to replace %s, whose pod lacks the new %s (add before remove)", name, m.Name, fields)}
}

// drifted are the voters whose pod needs a new pod for the current spec.
func (v *view) drifted() map[uint64]bool {
	out := map[uint64]bool{}
	for _, m := range v.voters {
		if w := v.way(m); w == wayRecreate || w == wayReplace {
			out[m.ID] = true
		}
	}
	return out
}

// learnerReplacesDrifted tells the in-flight rule that a learner beyond the size is the new member
// of a rollout: exactly Size live voters, one of which the rollout rule would replace through a
// learner, and nothing held. Such a learner is finished (promoted), not abandoned; rule
// 12 then removes the drifted voter.
func (v *view) learnerReplacesDrifted(live int) bool {
	if live != v.d.Size || len(v.heldFields()) > 0 || v.tlsHeld() {
		return false
	}
	for _, m := range v.voters {
		if v.alive(m) && v.way(m) == wayReplace {
			return true
		}
	}
	return false
}
