package planner

import (
	"testing"
	"time"
)

// The quorum rule: without a reachable quorum and leader the planner waits, reports, or with
// the opt-in recovers from the best survivor.
func TestPlanQuorumLoss(t *testing.T) {
	optIn := func(n int) func() Desired {
		return func() Desired { d := desired(n); d.QuorumLossRecovery = true; return d }
	}
	twoOfThreeDown := func(since time.Time) func() Observed {
		return func() Observed {
			o := cluster(3)
			crashloop(&o, 1, since)
			crashloop(&o, 2, since)
			mem(&o, 3).Revision = 4999
			return o
		}
	}
	runCases(t, []tcase{
		{"quorum lost briefly: wait", size(3), twoOfThreeDown(t0.Add(-time.Minute)), want{kind: Wait, reason: "QuorumUnavailable"}},
		{"quorum lost for long: report only", size(3), twoOfThreeDown(t0.Add(-time.Hour)), want{kind: QuorumLost, reason: "QuorumLost"}},
		{"quorum lost for long with opt-in: force new cluster from survivor", optIn(3), twoOfThreeDown(t0.Add(-time.Hour)),
			want{kind: ForceNewCluster, from: 3, name: mname(3)}},
		{"quorum lost, opt-in, still in grace: wait", optIn(3), twoOfThreeDown(t0.Add(-time.Minute)), want{kind: Wait, reason: "QuorumUnavailable"}},
		{"quorum loss time is when the quorum-breaking member fell", optIn(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Minute)) // second failure: quorum lost a minute ago
			return o
		}, want{kind: Wait, reason: "QuorumUnavailable"}},
		{"force new cluster picks the highest revision, not the lowest id", optIn(5), func() Observed {
			o := cluster(5)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			crashloop(&o, 3, t0.Add(-time.Hour))
			mem(&o, 4).Revision = 100
			mem(&o, 5).Revision = 200
			return o
		}, want{kind: ForceNewCluster, from: 5}},
		{"force new cluster never from a member without pod", optIn(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			dropPod(&o, mname(3))
			return o
		}, want{kind: QuorumLost, reason: "NoSurvivor"}},
		{"1-member cluster down for long with opt-in: no survivor", optIn(1), crashlooping(1, 1), want{kind: QuorumLost, reason: "NoSurvivor"}},
		{"even 4 with two down is quorum loss", size(4), func() Observed {
			o := cluster(4)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			o.LeaderID = 3
			mem(&o, 3).Reachable = true
			return o
		}, want{kind: Wait, reason: "PartialVisibility"}},
		{"even 4 with two down and no leader is quorum loss", size(4), crashlooping(4, 1, 2), want{kind: QuorumLost}},
		{"size 7 with four down: quorum lost", size(7), func() Observed {
			o := cluster(7)
			for id := uint64(1); id <= 4; id++ {
				crashloop(&o, id, t0.Add(-time.Hour))
			}
			return o
		}, want{kind: QuorumLost}},
		{"reachable leader with minority view: partial visibility, never force", optIn(5), func() Observed {
			o := cluster(5)
			for id := uint64(2); id <= 4; id++ {
				unreachable(&o, id, t0.Add(-time.Hour))
			}
			return o
		}, want{kind: Wait, reason: "PartialVisibility"}},
		{"quorum reachable, no leader: wait for election", size(3), func() Observed {
			o := cluster(3)
			o.LeaderID = 0
			return o
		}, want{kind: Wait, reason: "NoLeader"}},
		{"learners do not count for quorum", size(3), func() Observed {
			o := cluster(1)
			crashloop(&o, 1, t0.Add(-time.Hour))
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			return o
		}, want{kind: QuorumLost}},
	})
}

// crashlooping is a healthy n-member cluster whose members ids have crash-looped for an
// hour.
func crashlooping(n int, ids ...uint64) func() Observed {
	return func() Observed {
		o := cluster(n)
		for _, id := range ids {
			crashloop(&o, id, t0.Add(-time.Hour))
		}
		return o
	}
}
