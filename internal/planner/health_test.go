package planner

import (
	"testing"
)

// The alive-quorum rule: no change without an alive quorum.
func TestPlanAliveQuorum(t *testing.T) {
	runCases(t, []tcase{
		{"reachable quorum but pods gone: degraded wait", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			dropPod(&o, mname(3))
			return o
		}, want{kind: Wait, reason: "Degraded"}},
	})
}

func TestRemovalSafe(t *testing.T) {
	o := cluster(3)
	v := newView(desired(3).withDefaults(), o)
	if !v.removalSafe(v.byID[3]) {
		t.Error("removing one healthy member of 3 healthy should be safe")
	}
	o = cluster(3)
	unreachable(&o, 2, t0)
	v = newView(desired(3).withDefaults(), o)
	if v.removalSafe(v.byID[3]) {
		t.Error("removing a healthy member of 3 with one down leaves 1 alive of 2: unsafe")
	}
	if !v.removalSafe(v.byID[2]) {
		t.Error("removing the down member leaves 2 alive of 2: safe")
	}
	o = cluster(1)
	v = newView(desired(1).withDefaults(), o)
	if v.removalSafe(v.byID[1]) {
		t.Error("removing the last voter must never be safe")
	}
	o = cluster(1)
	withLearner(&o, 99, "c-new", true, true, true, 0)
	v = newView(desired(1).withDefaults(), o)
	if !v.removalSafe(v.byID[99]) {
		t.Error("removing a learner is always quorum-safe")
	}
}
