package planner

import (
	"fmt"
	"sort"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planInFlight is the in-flight rule: one membership change at a time. A learner, a member that
// has not started, or the Pending record is an in-flight change. It is finished or
// abandoned before any other membership change, in this order:
//   - a learner no longer needed (voters that are not dead >= Size) → RemoveMember;
//     dead voters are about to be replaced, so a learner in flight when a voter died
//     still fills the gap. A learner that replaces a drifted voter in a rollout (the
//     rollout rule) is needed: it is finished, and the scale-down rule then removes the drifted voter.
//   - Pending older than LearnerTimeout → RemoveMember (stuck learner).
//   - its pod gone for ReplaceGoneAfter → RemoveMember.
//   - no pod, not started, name known from Pending → CreatePod (the pod joins the
//     existing cluster).
//   - no pod otherwise (started, or name unknown) → RemoveMember after
//     ReplaceGoneAfter: there is nothing to start.
//   - pod exists but the member has not started or does not answer → Wait, or
//     RemoveMember once down for ReplaceUnhealthyAfter (DNS lag is far shorter).
//   - a started learner that has caught up (raft index within PromoteMaxLag of the
//     leader's and at least 90% of it, etcd's own promotion check) → PromoteLearner;
//     otherwise Wait.
//
// Removals and promotions also need the alive-quorum rule's alive quorum. Removing a learner never
// changes the voter quorum, so abandoning one is always safe, and the next attempt uses
// a new name. The Pending record is cleared (Action.ClearPending, decided in newView)
// once its member is a started voter, or has been missing from the list for
// ReplaceGoneAfter after it was added.
func (v *view) planInFlight() (Action, bool) {
	var inflight []*Member
	for _, m := range v.members {
		if m.IsLearner || m.Name == "" {
			inflight = append(inflight, m)
		}
	}
	if len(inflight) == 0 {
		return Action{}, false
	}
	// The recorded step first; anything else (e.g. added by hand) after it.
	sort.SliceStable(inflight, func(i, j int) bool {
		return v.isPending(inflight[i]) && !v.isPending(inflight[j])
	})
	m := inflight[0]
	pod := v.podOf[m.ID]
	name := m.Name
	if name == "" && v.isPending(m) {
		name = v.pending.Name
	}
	if name == "" && pod != nil {
		name = pod.Name
	}
	started := m.Name != ""
	kind := "learner"
	if !m.IsLearner {
		kind = "member"
	}
	abandon := func(reason, msg string) (Action, bool) {
		if !v.healthyForChange() {
			return wait(v1beta2.ReasonDegraded, fmt.Sprintf("not removing %s %x while the voting members are degraded", kind, m.ID), requeueShort), true
		}
		if !v.removalSafe(m) {
			return wait(v1beta2.ReasonRemovalWouldLoseQuorum, fmt.Sprintf("not removing %s %x: %s", kind, m.ID, msg), requeueShort), true
		}
		return Action{Kind: RemoveMember, ID: m.ID, Name: name, DeletePod: pod != nil, Reason: reason,
			Message: fmt.Sprintf("removing %s %s (%x): %s", kind, name, m.ID, msg)}, true
	}

	// Dead voters are about to be replaced, so they do not count here: a
	// learner that was in flight when a voter died still fills the gap.
	if live := len(v.voters) - v.deadVoters(); m.IsLearner && live >= v.d.Size && !v.learnerReplacesDrifted(live) {
		return abandon(v1beta2.ReasonLearnerNotNeeded, fmt.Sprintf("already %d live voting members for size %d", live, v.d.Size))
	}
	if v.isPending(m) {
		if age := v.o.Now.Sub(v.pending.AddedAt); age >= v.d.LearnerTimeout {
			return abandon(v1beta2.ReasonLearnerStuck, fmt.Sprintf("not promoted %s after it was added", age.Round(time.Second)))
		}
	}
	el, over := v.downFor(m)
	switch {
	case pod != nil && pod.gone():
		if over {
			return abandon(v1beta2.ReasonLearnerPodGone, "its pod is gone")
		}
		return wait(v1beta2.ReasonMemberPodGone, fmt.Sprintf("pod %s of %s %x is gone", pod.Name, kind, m.ID), remaining(v.grace(m), el)), true
	case pod == nil && !started && name != "" && !v.podNameTaken(name):
		return Action{Kind: CreatePod, Name: name, ID: m.ID, Version: v.newMemberVersion(), Reason: v1beta2.ReasonStartingMember,
			Message: fmt.Sprintf("creating pod for %s %s (%x) to join the cluster", kind, name, m.ID)}, true
	case pod == nil:
		if over {
			return abandon(v1beta2.ReasonMemberWithoutPod, "it has no pod and none can be created for it")
		}
		return wait(v1beta2.ReasonMemberWithoutPod, fmt.Sprintf("%s %x has no pod", kind, m.ID), remaining(v.grace(m), el)), true
	case !started || !m.Reachable:
		if over {
			return abandon(v1beta2.ReasonMemberNotStarting, fmt.Sprintf("its pod has not served for %s", el.Round(time.Second)))
		}
		return wait(v1beta2.ReasonMemberStarting, fmt.Sprintf("waiting for %s %s (%x) to start", kind, name, m.ID), requeueShort), true
	}
	// Started, reachable learner.
	if !v.healthyForChange() {
		return wait(v1beta2.ReasonDegraded, "not promoting while the voting members are degraded", requeueShort), true
	}
	if !caughtUp(m.RaftIndex, v.leader.RaftIndex, v.d.PromoteMaxLag) {
		return wait(v1beta2.ReasonLearnerCatchingUp, fmt.Sprintf("learner %s at raft index %d, leader at %d", name, m.RaftIndex, v.leader.RaftIndex), requeueWait), true
	}
	return Action{Kind: PromoteLearner, ID: m.ID, Name: name, Reason: v1beta2.ReasonPromotingLearner,
		Message: fmt.Sprintf("promoting caught-up learner %s (%x)", name, m.ID)}, true
}

// caughtUp: within maxLag entries of the leader and at least 90% of its
// index (etcd refuses a promotion below 90%: "learner not ready").
func caughtUp(learner, leader, maxLag uint64) bool {
	if learner >= leader {
		return true
	}
	return leader-learner <= maxLag && learner >= leader-leader/10
}

// isPending reports whether m is the member of the Pending record.
func (v *view) isPending(m *Member) bool {
	return v.pending != nil && v.pending.ID == m.ID
}

// deadVoters counts the voters past their grace.
func (v *view) deadVoters() int {
	n := 0
	for _, m := range v.voters {
		if v.dead(m) {
			n++
		}
	}
	return n
}
