package planner

import (
	"fmt"
	"sort"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planDead is the dead-member rule: a voter not alive for longer than its grace — ReplaceGoneAfter
// when its pod is missing or gone, ReplaceUnhealthyAfter otherwise (crash-looping,
// terminated, node not ready, Running but not answering) — is dead → ReplaceMember
// (remove it and its pod; later plans add a fresh member under a new name, never the
// old name or data). The one down longest goes first, one at a time, only with nothing
// in flight, and only if the alive voters stay >= Quorum(voters-1). Removing before
// adding restores fault tolerance sooner, and etcd refuses MemberAdd while a dead
// member is listed anyway. A member merely slow to start (DNS lag: pod Running, not yet
// Ready, name not yet resolvable) is never removed within its grace.
func (v *view) planDead() (Action, bool) {
	var dead []*Member
	for _, m := range v.voters {
		if v.dead(m) {
			dead = append(dead, m)
		}
	}
	if len(dead) == 0 {
		return Action{}, false
	}
	sort.SliceStable(dead, func(i, j int) bool { return v.downSince(dead[i]).Before(v.downSince(dead[j])) })
	for _, m := range dead {
		if !v.removalSafe(m) {
			continue
		}
		pod := v.podOf[m.ID]
		why := "its pod is missing"
		if pod != nil {
			why = "its pod is " + podTrouble(pod)
		}
		el, _ := v.downFor(m)
		return Action{Kind: ReplaceMember, ID: m.ID, Name: m.Name, DeletePod: pod != nil, Reason: v1beta2.ReasonReplacingDeadMember,
			Message: fmt.Sprintf("member %s (%x) unreachable for %s and %s; removing it so a new member can take its place", m.Name, m.ID, el.Round(time.Second), why)}, true
	}
	return wait(v1beta2.ReasonRemovalWouldLoseQuorum, "dead members cannot be removed without losing quorum", requeueShort), true
}

// podTrouble says in words why p's member is not alive, for the message.
func podTrouble(p *Pod) string {
	switch {
	case p.Deleting:
		return "being deleted"
	case p.Phase == PodFailed || p.Phase == PodSucceeded:
		return "terminated (" + string(p.Phase) + ")"
	case p.NodeNotReady:
		return "on a node that is not ready"
	case p.CrashLooping:
		return "crash-looping"
	case p.Terminated:
		return "not running"
	case p.Phase != PodRunning:
		return "in phase " + string(p.Phase)
	case !p.Ready:
		return "running but not ready"
	}
	return "running but its member does not answer"
}
