package planner

import (
	"fmt"
	"sort"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planQuorum is the quorum rule: fewer than Quorum(voters) voters reachable, or no reachable
// leader.
//   - a quorum is reachable but there is no leader → Wait: an election takes seconds.
//   - the leader is reachable but fewer voters than a quorum → Wait
//     (PartialVisibility): etcd leaders step down when they lose quorum (CheckQuorum),
//     so a live leader means our view is partial, not that the cluster is dead.
//   - otherwise Wait until quorum has been lost for QuorumLossGrace, counted from the
//     moment the quorum-breaking voter went down; elections and restarts lose quorum
//     briefly.
//   - then QuorumLost, touching nothing, unless QuorumLossRecovery is set:
//     ForceNewCluster from the alive voter with the highest revision. Every committed
//     entry is on a majority of voters, so that voter holds everything that survived;
//     learners are not in that majority and may lag, so they are never the source. The
//     controller records the recovery (source, its revision, a new member name) before
//     acting, and the recovery rule takes over.
//
// A member list without a voting member is refused (Wait). Without quorum no
// membership change is even possible, and guessing would risk the data, so no rule
// after this one runs.
func (v *view) planQuorum() (Action, bool) {
	if len(v.voters) == 0 {
		// etcd never lists only learners; refuse to reason about it.
		return wait(v1beta2.ReasonNoVoters, "the member list has no voting member", requeueWait), true
	}
	if v.reachableVoters >= Quorum(len(v.voters)) && v.leader != nil && v.leader.Reachable {
		return Action{}, false
	}
	return v.planNoQuorum(), true
}

// planNoQuorum decides for a cluster without a reachable quorum or leader.
func (v *view) planNoQuorum() Action {
	n, q := len(v.voters), Quorum(len(v.voters))
	if v.reachableVoters >= q {
		return wait(v1beta2.ReasonNoLeader, "a quorum is reachable but no leader is known; waiting for the election", requeueShort)
	}
	if v.leader != nil && v.leader.Reachable {
		return wait(v1beta2.ReasonPartialVisibility, fmt.Sprintf("only %d of %d voting members answer, but leader %x does: the cluster has quorum beyond our view; waiting", v.reachableVoters, n, v.leader.ID), requeueWait)
	}
	// Quorum was lost when the (n-q+1)-th voter went down.
	var downs []time.Time
	for _, m := range v.voters {
		if !m.Reachable {
			t := m.UnhealthySince
			if t.IsZero() || t.After(v.o.Now) {
				t = v.o.Now
			}
			downs = append(downs, t)
		}
	}
	sort.Slice(downs, func(i, j int) bool { return downs[i].Before(downs[j]) })
	lostSince := downs[n-q] // len(downs) = n - reachable >= n-q+1
	msg := fmt.Sprintf("%d of %d voting members reachable, %d needed", v.reachableVoters, n, q)
	if el := v.o.Now.Sub(lostSince); el < v.d.QuorumLossGrace {
		return wait(v1beta2.ReasonQuorumUnavailable, msg+"; waiting for members to return", remaining(v.d.QuorumLossGrace, el))
	}
	if !v.d.QuorumLossRecovery {
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonQuorumLost, RequeueAfter: requeueLong,
			Message: msg + fmt.Sprintf(" for over %s; nothing is changed (enable quorum-loss recovery to force a new cluster from the most up-to-date survivor, or restore from a backup)", v.d.QuorumLossGrace)}
	}
	// Only voters: every committed entry is on a majority of voters, so the
	// surviving voter with the most data has everything that survived. A
	// learner is not part of that majority and may lag arbitrarily.
	var best *Member
	for _, m := range v.voters {
		if !v.alive(m) {
			continue
		}
		if best == nil || betterSurvivor(m, best) {
			best = m
		}
	}
	if best == nil {
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonNoSurvivor, RequeueAfter: requeueLong,
			Message: msg + "; no reachable member with a running pod to recover from"}
	}
	name := NewMemberNames(v.d.ClusterName, v.o.nameSeed(), 1, v.usedNames())[0]
	return Action{Kind: ForceNewCluster, From: best.ID, ID: best.ID, Name: best.Name, Revision: best.Revision,
		Members: []NewMember{{Name: name}}, Version: v.runningVersion(best), Reason: v1beta2.ReasonQuorumLossRecovery,
		Message: msg + fmt.Sprintf(" for over %s; seeding a new cluster (member %s) from %s at revision %d", v.d.QuorumLossGrace, name, best.Name, best.Revision)}
}

// betterSurvivor orders recovery candidates: most data first, then the
// longer raft log, then the lowest ID for determinism.
func betterSurvivor(a, b *Member) bool {
	if a.Revision != b.Revision {
		return a.Revision > b.Revision
	}
	if a.RaftIndex != b.RaftIndex {
		return a.RaftIndex > b.RaftIndex
	}
	return a.ID < b.ID
}
