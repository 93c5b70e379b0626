package planner

import (
	"fmt"
	"sort"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planScaleDown is the scale-down rule: voters > Size → remove members that are not alive first
// (even within their grace: a removal is happening anyway), then members whose pod is
// not on the current spec (the rollout rule replaces such a member by adding one first;
// followers by name, the leader last), then
// the newest pod, then the highest name. If the victim is the leader → MoveLeader to an alive voter first
// (removing the leader stalls writes for an election). Wait instead if the alive voters
// after the removal would be fewer than the new quorum.
func (v *view) planScaleDown() (Action, bool) {
	if len(v.voters) <= v.d.Size {
		return Action{}, false
	}
	return v.scaleDown(), true
}

// scaleDown picks the voter to remove and removes it, or moves leadership off it first.
func (v *view) scaleDown() Action {
	cands := append([]*Member(nil), v.voters...)
	drifted := v.drifted() // pods a rollout would renew go first (the rollout rule)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		aa, ba := v.alive(a), v.alive(b)
		if aa != ba {
			return !aa
		}
		if !aa {
			return v.downSince(a).Before(v.downSince(b))
		}
		if da, db := drifted[a.ID], drifted[b.ID]; da != db {
			return da
		} else if da {
			// A rollout's order: followers first by name, the leader last.
			if la, lb := a == v.leader, b == v.leader; la != lb {
				return lb
			}
			return a.Name < b.Name
		}
		ca, cb := v.podOf[a.ID].CreatedAt, v.podOf[b.ID].CreatedAt
		if !ca.Equal(cb) {
			return ca.After(cb)
		}
		return a.Name > b.Name
	})
	m := cands[0]
	if m == v.leader {
		next := map[uint64]bool{}
		for _, c := range cands[:len(v.voters)-v.d.Size] {
			next[c.ID] = true
		}
		for id := range drifted {
			next[id] = true
		}
		to := v.leaderTarget(m, nil, next)
		if to == nil {
			return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before removing the leader", requeueShort)
		}
		return Action{Kind: MoveLeader, From: m.ID, To: to.ID, Reason: v1beta2.ReasonScalingDown,
			Message: fmt.Sprintf("moving leadership from %s to %s before removing %s", m.Name, to.Name, m.Name)}
	}
	if !v.removalSafe(m) {
		return wait(v1beta2.ReasonRemovalWouldLoseQuorum, fmt.Sprintf("removing %s would leave fewer alive voters than the quorum of %d", m.Name, len(v.voters)-1), requeueShort)
	}
	msg := fmt.Sprintf("removing %s (%d voting members, size %d)", m.Name, len(v.voters), v.d.Size)
	if drifted[m.ID] {
		msg += "; its pod is not on the current spec"
	}
	return Action{Kind: RemoveMember, ID: m.ID, Name: m.Name, DeletePod: v.podOf[m.ID] != nil, Reason: v1beta2.ReasonScalingDown, Message: msg}
}
