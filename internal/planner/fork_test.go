package planner

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// answered gives every reachable member of o a Status answer naming cluster 0xc1 and its
// own member list (the healthy cluster's view: everyone agrees).
func answered(o *Observed) {
	witnessed(o)
	o.Answers = nil
	for _, m := range o.Members {
		if m.Reachable {
			o.Answers = append(o.Answers, ClusterAnswer{Pod: m.Name, MemberID: m.ID, ClusterID: 0xc1})
		}
	}
	for i := range o.MemberLists {
		o.MemberLists[i].ClusterID = 0xc1
	}
}

// forcedNew makes member id answer as a member restarted with --force-new-cluster: same
// ID and cluster ID, but it lists only itself and leads itself. The others still list it.
func forcedNew(o *Observed, id uint64) {
	for i := range o.MemberLists {
		if l := &o.MemberLists[i]; l.From == id {
			l.Members = []Member{*mem(o, id)}
		}
	}
}

// inOtherCluster makes member id answer with another cluster ID (an image that wraps
// etcd's flags to bootstrap a cluster of its own under the member's name).
func inOtherCluster(o *Observed, id uint64) {
	for i := range o.Answers {
		if o.Answers[i].MemberID == id {
			o.Answers[i].ClusterID = 0xf0
		}
	}
	for i := range o.MemberLists {
		if o.MemberLists[i].From == id {
			o.MemberLists[i].ClusterID = 0xf0
		}
	}
}

// forkedSince: the controller has seen the disagreement for an hour.
func forkedSince(o *Observed) { o.ForkSince = t0.Add(-time.Hour) }

func naming(want ...string) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		for _, n := range want {
			if !strings.Contains(a.Message, n) {
				t.Errorf("message %q does not name %s", a.Message, n)
			}
		}
	}
}

// The fork rule: a fork stops every step, whichever rule would act on the cluster otherwise.
// Each case is something today's rules act on destructively (a drifted member restarted,
// a dead member replaced, an orphan deleted, a member removed, a new cluster forced),
// with member 3 forked.
func TestPlanFork(t *testing.T) {
	withClaims := func(o *Observed) {
		for _, p := range o.Pods {
			o.Claims = append(o.Claims, p.Name)
		}
	}
	drifted := func() Observed {
		o := cluster(3)
		answered(&o)
		withClaims(&o)
		for i := range o.Pods {
			o.Pods[i].Drift = Drift{Fields: []string{"repository"}, NewPod: true}
		}
		return o
	}
	optIn := func() Desired { d := desired(3); d.QuorumLossRecovery = true; return d }
	forked := want{kind: Wait, reason: "Forked", check: naming("c-m3")}
	runCases(t, []tcase{
		{"everyone agrees: the rollout goes on", size(3), drifted,
			want{kind: DeletePod}},
		{"a member that forced a new cluster, within the settle time: wait", size(3), func() Observed {
			o := drifted()
			forcedNew(&o, 3)
			o.ForkSince = t0.Add(-3 * time.Second)
			return o
		}, want{kind: Wait, reason: "MembershipUnsettled"}},
		{"a member that forced a new cluster, first seen now: wait", size(3), func() Observed {
			o := drifted()
			forcedNew(&o, 3)
			return o
		}, want{kind: Wait, reason: "MembershipUnsettled"}},
		{"a member that forced a new cluster: the rollout halts, Forked names it", size(3), func() Observed {
			o := drifted()
			forcedNew(&o, 3)
			forkedSince(&o)
			return o
		}, forked},
		{"a member with another cluster ID: Forked", size(3), func() Observed {
			o := drifted()
			inOtherCluster(&o, 3)
			forkedSince(&o)
			return o
		}, want{kind: Wait, reason: "Forked", check: naming("c-m3", "cluster IDs differ")}},
		{"a dead member past its grace is not replaced", size(3), func() Observed {
			o := cluster(4)
			crashloop(&o, 4, t0.Add(-time.Hour))
			answered(&o)
			forcedNew(&o, 3)
			forkedSince(&o)
			return o
		}, forked},
		{"an orphan pod is not deleted", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			answered(&o)
			forcedNew(&o, 3)
			forkedSince(&o)
			return o
		}, forked},
		{"no member is removed by a scale-down", size(2), func() Observed {
			o := cluster(3)
			answered(&o)
			forcedNew(&o, 3)
			forkedSince(&o)
			return o
		}, forked},
		{"no new cluster is forced from a survivor", optIn, func() Observed {
			o := cluster(5)
			for _, id := range []uint64{1, 2, 4} {
				crashloop(&o, id, t0.Add(-time.Hour))
			}
			o.LeaderID = 0
			answered(&o)
			inOtherCluster(&o, 3)
			forkedSince(&o)
			return o
		}, want{kind: Wait, reason: "Forked"}},
		{"two members, each its own cluster: both named", size(2), func() Observed {
			o := cluster(2)
			answered(&o)
			inOtherCluster(&o, 2)
			forkedSince(&o)
			return o
		}, want{kind: Wait, reason: "Forked", check: naming("c-m1", "c-m2")}},
		// What the bench showed: the forked member answers 410 Gone to its old peers'
		// raft messages, they stop themselves, and it alone answers, listing itself.
		{"the fork answers alone, its peers stopped: their pods and claims stay", size(3), func() Observed {
			o := drifted()
			crashloop(&o, 1, t0.Add(-time.Minute))
			crashloop(&o, 2, t0.Add(-time.Minute))
			dropMember(&o, 1)
			dropMember(&o, 2)
			o.LeaderID = 3
			answered(&o)
			forkedSince(&o)
			return o
		}, want{kind: Wait, reason: "Forked", check: naming("c-m1", "c-m2", "c-m3", "only 1 of the 3")}},
		{"paused wins: nothing either way", func() Desired { d := desired(3); d.Paused = true; return d }, func() Observed {
			o := drifted()
			forcedNew(&o, 3)
			forkedSince(&o)
			return o
		}, want{kind: Wait, reason: "Paused"}},
	})
}

func TestDetectFork(t *testing.T) {
	o := cluster(3)
	answered(&o)
	if f := DetectFork(o); f != nil {
		t.Fatalf("a healthy cluster: %+v", f)
	}
	// A member whose list lags by the learner just added is a disagreement too (waited
	// out by ForkSettle, not ignored).
	lag := cluster(3)
	withLearner(&lag, 9, "c-new", true, true, true, 100)
	answered(&lag)
	for i := range lag.MemberLists {
		if l := &lag.MemberLists[i]; l.From == 2 {
			l.Members = slices.DeleteFunc(l.Members, func(m Member) bool { return m.ID == 9 })
		}
	}
	if f := DetectFork(lag); f == nil || !slices.Equal(f.Members, []string{"c-m2"}) {
		t.Errorf("a list lagging by one learner: %+v, want c-m2 named", f)
	}
	// A member whose Status and list name different clusters is out of every group.
	odd := cluster(3)
	answered(&odd)
	odd.MemberLists[0].ClusterID = 0xf0
	if f := DetectFork(odd); f == nil || !slices.Equal(f.Members, []string{"c-m1"}) {
		t.Errorf("two cluster IDs from one member: %+v", f)
	}
	// One answer is no disagreement.
	one := cluster(1)
	answered(&one)
	if f := DetectFork(one); f != nil {
		t.Errorf("one member: %+v", f)
	}
}
