package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The paused and size rules, and healthy clusters of every size, which pass every rule to Done.
func TestPlanBasics(t *testing.T) {
	runCases(t, []tcase{
		{"paused healthy cluster", func() Desired { d := desired(3); d.Paused = true; return d },
			func() Observed { return cluster(3) }, want{kind: Wait, reason: "Paused"}},
		{"paused with a dead member and an orphan", func() Desired { d := desired(3); d.Paused = true; return d },
			func() Observed {
				o := cluster(3)
				dropPod(&o, mname(2))
				unreachable(&o, 2, t0.Add(-time.Hour))
				o.Pods = append(o.Pods, Pod{Name: "c-orphan", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
				return o
			}, want{kind: Wait, reason: "Paused"}},
		{"paused before bootstrap", func() Desired { d := desired(3); d.Paused = true; return d },
			func() Observed { return Observed{Now: t0} }, want{kind: Wait, reason: "Paused"}},
		{"paused with quorum lost and recovery opt-in", func() Desired {
			d := desired(3)
			d.Paused, d.QuorumLossRecovery = true, true
			return d
		}, func() Observed {
			o := cluster(3)
			unreachable(&o, 1, t0.Add(-time.Hour))
			unreachable(&o, 2, t0.Add(-time.Hour))
			return o
		}, want{kind: Wait, reason: "Paused"}},
		{"size zero is invalid", size(0), func() Observed { return cluster(3) }, want{kind: Wait, reason: "InvalidSpec"}},
		{"negative size is invalid before bootstrap", size(-1), func() Observed { return Observed{Now: t0} }, want{kind: Wait, reason: "InvalidSpec"}},
		{"healthy 3 is done", size(3), func() Observed { return cluster(3) }, want{kind: Done}},
		{"healthy 1 is done", size(1), func() Observed { return cluster(1) }, want{kind: Done}},
		{"healthy 7 is done", size(7), func() Observed { return cluster(7) }, want{kind: Done}},
		{"healthy even 4 is done", size(4), func() Observed { return cluster(4) }, want{kind: Done}},
	})
}

// TestPlanSequences drives whole procedures by applying each action to a
// simulated observation, checking each step is the expected one.
func TestPlanSequences(t *testing.T) {
	t.Run("scale 1 to 3", func(t *testing.T) {
		o := runPlan(t, desired(3), cluster(1), kindOf, nil,
			"AddLearner CreatePod Wait PromoteLearner AddLearner CreatePod Wait PromoteLearner Done")
		if len(o.Members) != 3 {
			t.Fatalf("%d members", len(o.Members))
		}
	})
	t.Run("rolling upgrade of 3", func(t *testing.T) {
		runPlan(t, desired(3), upgrading(3, 1)(), func(a Action) string { return a.String()[:strings.IndexAny(a.String()+" ", " ")] }, nil,
			"UpgradeMember{c-m2 UpgradeMember{c-m3 MoveLeader{1 UpgradeMember{c-m1 Done")
	})
	t.Run("quorum loss recovery regrows the cluster", func(t *testing.T) {
		d, o := desired(3), cluster(3)
		d.QuorumLossRecovery = true
		crashloop(&o, 1, t0.Add(-time.Hour))
		crashloop(&o, 2, t0.Add(-time.Hour))
		runPlan(t, d, o, kindOf, func(o *Observed, a Action) {
			if a.Kind == ForceNewCluster || a.Kind == DeletePod {
				o.Now = o.Now.Add(time.Minute) // orphans age past the list-lag guard
			}
		}, "ForceNewCluster AddLearner CreatePod Wait PromoteLearner AddLearner CreatePod Wait PromoteLearner Done")
	})
	t.Run("scale 5 to 3 with the leader newest", func(t *testing.T) {
		o := runPlan(t, desired(3), cluster(5), kindOf, nil, "MoveLeader RemoveMember RemoveMember Done")
		var kept []uint64
		for _, m := range o.Members {
			kept = append(kept, m.ID)
		}
		if fmt.Sprint(kept) != "[3 4 5]" {
			t.Fatalf("kept %v; want the three oldest [3 4 5]", kept)
		}
	})
	t.Run("replace a dead member of 3", func(t *testing.T) {
		o := cluster(3)
		crashloop(&o, 2, t0.Add(-time.Hour))
		o = runPlan(t, desired(3), o, kindOf, nil, "ReplaceMember AddLearner CreatePod Wait PromoteLearner Done")
		for _, m := range o.Members {
			if m.Name == mname(2) {
				t.Fatal("dead member's name reused")
			}
		}
	})
}

// runPlan plans from o and applies each action (simulate, then after if not nil) until
// Done, at most 30 steps, checking the invariants at each; the steps, each named by
// name, must be want. It returns the last observation.
func runPlan(t *testing.T, d Desired, o Observed, name func(Action) string, after func(*Observed, Action), want string) Observed {
	t.Helper()
	var steps []string
	for range 30 {
		a := Plan(d, o)
		checkInvariants(t, d, o, a)
		steps = append(steps, name(a))
		if a.Kind == Done {
			break
		}
		o = simulate(t, o, a)
		if after != nil {
			after(&o, a)
		}
	}
	if got := strings.Join(steps, " "); got != want {
		t.Fatalf("steps\n got %s\nwant %s", got, want)
	}
	return o
}

func kindOf(a Action) string { return a.Kind.String() }

// simulate applies a to o the way a well-behaved controller and etcd would,
// advancing time by a second.
func simulate(t *testing.T, o Observed, a Action) Observed {
	t.Helper()
	o.Now = o.Now.Add(time.Second)
	if a.ClearPending {
		o.Pending = nil
	}
	nextID := uint64(100)
	for _, m := range o.Members {
		if m.ID >= nextID {
			nextID = m.ID + 1
		}
	}
	switch a.Kind {
	case AddLearner:
		o.Members = append(o.Members, Member{ID: nextID, IsLearner: true, UnhealthySince: o.Now})
		o.Pending = &PendingMember{Name: a.Name, ID: nextID, AddedAt: o.Now}
	case CreatePod:
		o.Pods = append(o.Pods, Pod{Name: a.Name, MemberID: a.ID, Phase: PodRunning, Version: a.Version, CreatedAt: o.Now})
	case Wait:
		// The pending learner starts and catches up.
		for i := range o.Members {
			m := &o.Members[i]
			if m.IsLearner && o.Pending != nil && m.ID == o.Pending.ID {
				m.Name, m.Reachable, m.RaftIndex, m.Revision, m.UnhealthySince = o.Pending.Name, true, 10000, 5000, time.Time{}
				m.Version = pod(&o, m.Name).Version
				pod(&o, m.Name).Ready = true
			}
		}
	case PromoteLearner:
		mem(&o, a.ID).IsLearner = false
	case ReplaceMember, RemoveMember:
		name := mem(&o, a.ID).Name
		dropMember(&o, a.ID)
		if a.DeletePod {
			dropPod(&o, name)
		}
		o.RetiredNames = append(o.RetiredNames, name)
	case MoveLeader:
		o.LeaderID = a.To
	case ForceNewCluster:
		// The recovery as FinishRecovery leaves it: the survivor's data serving alone,
		// every other member's pod deleted by the controller.
		var kept []Member
		for _, m := range o.Members {
			if m.ID == a.From {
				kept = append(kept, m)
			} else if m.Name != "" {
				dropPod(&o, m.Name)
			}
		}
		o.Members, o.LeaderID = kept, a.From
	case DeletePod:
		dropPod(&o, a.Name)
	case UpgradeMember:
		pod(&o, a.Name).Version = a.Version
		mem(&o, a.ID).Version = a.Version
	default:
		t.Fatalf("simulate: unexpected %v", a)
	}
	witnessed(&o)
	return o
}
