package planner

import (
	"testing"
	"time"
)

// The scale-down rule: the least useful voter goes first, after leadership moved off it.
func TestPlanScaleDown(t *testing.T) {
	runCases(t, []tcase{
		{"scale 5 to 3 removes the newest pod", size(3), func() Observed {
			o := cluster(5)
			pod(&o, mname(4)).CreatedAt = t0.Add(-time.Minute) // newest
			return o
		}, want{kind: RemoveMember, id: 4, name: mname(4), deletePod: yes(), reason: "ScalingDown"}},
		{"scale down ties broken by highest name", size(2), func() Observed {
			o := cluster(3)
			for i := range o.Pods {
				o.Pods[i].CreatedAt = t0.Add(-time.Hour)
			}
			return o
		}, want{kind: RemoveMember, id: 3}},
		{"leader is the one to remove: move leadership first", size(2), func() Observed {
			o := cluster(3)
			pod(&o, mname(1)).CreatedAt = t0.Add(-time.Minute)
			mem(&o, 3).RaftIndex = 10001
			return o
		}, want{kind: MoveLeader, from: 1, to: 3}},
		{"after leadership moved the old leader is removed", size(2), func() Observed {
			o := cluster(3)
			pod(&o, mname(1)).CreatedAt = t0.Add(-time.Minute)
			o.LeaderID = 3
			return o
		}, want{kind: RemoveMember, id: 1}},
		{"scale down removes an unhealthy member first", size(3), func() Observed {
			o := cluster(4)
			unreachable(&o, 2, t0.Add(-5*time.Second)) // within grace: still chosen first
			return o
		}, want{kind: RemoveMember, id: 2}},
		{"scale down 2 to 1: newest is the leader, move first", size(1), func() Observed { return cluster(2) }, want{kind: MoveLeader, from: 1, to: 2}},
		{"scale down 2 to 1 after the move", size(1), func() Observed { o := cluster(2); o.LeaderID = 2; return o }, want{kind: RemoveMember, id: 1}},
		{"scale 7 to 5 removes the newest follower", size(5), func() Observed {
			o := cluster(7)
			pod(&o, mname(6)).CreatedAt = t0
			return o
		}, want{kind: RemoveMember, id: 6}},
		{"scale down waits for in-flight learner", size(3), func() Observed {
			o := cluster(5)
			withLearner(&o, 99, "c-new", true, true, true, 0)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "LearnerNotNeeded"}},
		{"scale down during a dead member replaces the dead one", size(3), crashlooping(5, 5), want{kind: ReplaceMember, id: 5}},
	})
}
