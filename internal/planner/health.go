package planner

import (
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// How the planner judges a member (see "Vocabulary" in the package documentation),
// and the alive-quorum rule, which needs the cluster alive before any change.

// planAliveQuorum is the alive-quorum rule: fewer alive voters than a quorum, or the leader not
// alive → Wait. Every change after this rule must leave an alive quorum, so it needs
// one now.
func (v *view) planAliveQuorum() (Action, bool) {
	if v.healthyForChange() {
		return Action{}, false
	}
	return wait(v1beta2.ReasonDegraded, fmt.Sprintf("%d of %d voting members alive (reachable with a running pod); waiting before any change", v.aliveVoters, len(v.voters)), requeueShort), true
}

// healthyForChange: an alive quorum of voters and an alive leader, the
// precondition of every membership change.
func (v *view) healthyForChange() bool {
	return v.aliveVoters >= Quorum(len(v.voters)) && v.leader != nil && v.alive(v.leader)
}

// alive: reachable, started (it has published its name) and its pod exists and is not
// gone.
func (v *view) alive(m *Member) bool {
	p := v.podOf[m.ID]
	return m.Reachable && m.Name != "" && p != nil && !p.gone()
}

// downSince is when m stopped being alive, as far as the record shows.
func (v *view) downSince(m *Member) time.Time {
	var since time.Time
	p := v.podOf[m.ID]
	for _, t := range []time.Time{m.UnhealthySince, podUnhealthySince(p)} {
		if !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	if since.IsZero() || since.After(v.o.Now) {
		since = v.o.Now
	}
	if p != nil && p.CreatedAt.After(since) {
		since = p.CreatedAt
	}
	return since
}

func podUnhealthySince(p *Pod) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UnhealthySince
}

// grace is how long m may be down before it is replaced.
func (v *view) grace(m *Member) time.Duration {
	p := v.podOf[m.ID]
	if (p == nil || p.gone()) && !v.hasClaim(m.Name) {
		return v.d.ReplaceGoneAfter
	}
	// A member whose data is on a claim gets its pod back once the old one is gone
	// (the recreate rule); only if that does not happen (a pod stuck terminating on a lost node,
	// a claim that cannot be attached) is it replaced, after the long grace.
	return v.d.ReplaceUnhealthyAfter
}

// downFor returns how long m has been down and whether that exceeds its grace.
func (v *view) downFor(m *Member) (time.Duration, bool) {
	el := v.o.Now.Sub(v.downSince(m))
	return el, el >= v.grace(m)
}

// dead: not alive for longer than its grace.
func (v *view) dead(m *Member) bool {
	if v.alive(m) {
		return false
	}
	_, over := v.downFor(m)
	return over
}

// removalSafe: after removing m, the alive voters still form a quorum of the
// remaining voters, and at least one voter remains.
func (v *view) removalSafe(m *Member) bool {
	votersAfter, aliveAfter := len(v.voters), v.aliveVoters
	if !m.IsLearner {
		votersAfter--
		if v.alive(m) {
			aliveAfter--
		}
	}
	return votersAfter >= 1 && aliveAfter >= Quorum(votersAfter)
}
