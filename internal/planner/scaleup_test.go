package planner

import (
	"strings"
	"testing"
	"time"
)

// The scale-up rule: one learner at a time, under a name never used before.
func TestPlanScaleUp(t *testing.T) {
	runCases(t, []tcase{
		{"scale 3 to 5 adds one learner", size(5), func() Observed { return cluster(3) },
			want{kind: AddLearner, version: v37, check: func(t *testing.T, a Action) {
				if !strings.HasPrefix(a.Name, "c-") || a.Name == mname(1) {
					t.Errorf("bad new name %q", a.Name)
				}
			}}},
		{"scale 1 to 3 adds one learner", size(3), func() Observed { return cluster(1) }, want{kind: AddLearner}},
		{"promoted learner clears pending and next learner is added", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			mem(&o, 99).IsLearner = false
			return o
		}, want{kind: AddLearner, clearPending: yes(), check: notReused("c-new")}},
		{"pending member vanished: clear after grace", size(5), func() Observed {
			o := cluster(3)
			o.Pending = &PendingMember{Name: "c-new", ID: 99, AddedAt: t0.Add(-time.Minute)}
			return o
		}, want{kind: AddLearner, clearPending: yes(), check: notReused("c-new")}},
		{"pending member not yet listed (lagging list): keep record, pod safe", size(5), func() Observed {
			o := cluster(3)
			o.Pending = &PendingMember{Name: "c-new", ID: 99, AddedAt: t0.Add(-time.Second)}
			o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 99, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: AddLearner, clearPending: no()}},
	})
}

// An abandoned learner's name is forgotten once its pending record is
// cleared; a later attempt must still not propose it again.
func TestForgottenNameIsNotReproposed(t *testing.T) {
	d, o := desired(5), cluster(3)
	first := Plan(d, o)
	o.Now = o.Now.Add(time.Minute) // learner added, abandoned, record cleared
	second := Plan(d, o)
	if first.Kind != AddLearner || second.Kind != AddLearner {
		t.Fatalf("got %v then %v", first, second)
	}
	if first.Name == second.Name {
		t.Fatalf("name %s proposed twice", first.Name)
	}
}

// notReused checks that the action names a member other than the pending one, name.
func notReused(name string) func(*testing.T, Action) {
	return func(t *testing.T, a Action) {
		if a.Name == name {
			t.Errorf("reused the pending name %s", name)
		}
	}
}
