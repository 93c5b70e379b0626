package planner

import (
	"testing"
	"time"
)

// The in-flight rule: the in-flight learner is started, promoted or abandoned before any other
// membership change.
func TestPlanInFlight(t *testing.T) {
	runCases(t, []tcase{
		{"learner added, no pod yet: create its pod", size(5), threeAndLearner(false, false, false, 0), want{kind: CreatePod, id: 99, name: "c-new", version: v37}},
		{"learner pod starting (DNS lag): wait", size(5), threeAndLearner(false, false, true, 0), want{kind: Wait, reason: "MemberStarting"}},
		{"learner started but unreachable briefly: wait", size(5), threeAndLearner(true, false, true, 0), want{kind: Wait, reason: "MemberStarting"}},
		{"learner catching up: wait", size(5), threeAndLearner(true, true, true, 5000), want{kind: Wait, reason: "LearnerCatchingUp"}},
		{"learner caught up: promote", size(5), threeAndLearner(true, true, true, 9990), want{kind: PromoteLearner, id: 99, name: "c-new", clearPending: no()}},
		{"learner ahead of the leader snapshot: promote", size(5), threeAndLearner(true, true, true, 10005), want{kind: PromoteLearner, id: 99}},
		{"learner stuck past timeout is removed with its pod", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10)
			// The controller creates the learner's pod right after recording it.
			o.Pending.AddedAt = t0.Add(-DefaultLearnerTimeout - time.Second)
			pod(&o, "c-new").CreatedAt = o.Pending.AddedAt
			return o
		}, want{kind: RemoveMember, id: 99, name: "c-new", deletePod: yes(), reason: "LearnerStuck"}},
		{"learner never started past timeout is removed", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", false, false, false, 0)
			o.Pending.AddedAt = t0.Add(-DefaultLearnerTimeout)
			return o
		}, want{kind: RemoveMember, id: 99, name: "c-new", deletePod: no(), reason: "LearnerStuck"}},
		{"learner no longer needed after size reduced", size(3), threeAndLearner(true, true, true, 10000), want{kind: RemoveMember, id: 99, reason: "LearnerNotNeeded"}},
		{"learner pod failed within gone grace: wait", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, true, 0)
			p := pod(&o, "c-new")
			p.Phase, p.UnhealthySince = PodFailed, t0.Add(-2*time.Second)
			return o
		}, want{kind: Wait, reason: "MemberPodGone"}},
		{"learner pod failed beyond gone grace: remove", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, true, 0)
			p := pod(&o, "c-new")
			p.Phase, p.UnhealthySince = PodFailed, t0.Add(-time.Minute)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "LearnerPodGone", deletePod: yes()}},
		{"started learner whose pod vanished is removed after grace", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, false, 0)
			mem(&o, 99).UnhealthySince = t0.Add(-time.Minute)
			return o
		}, want{kind: RemoveMember, id: 99, deletePod: no(), reason: "MemberWithoutPod"}},
		{"unknown unstarted learner without pod: wait within grace", size(5), func() Observed {
			o := cluster(3)
			o.Members = append(o.Members, Member{ID: 77, IsLearner: true, UnhealthySince: t0.Add(-time.Second)})
			return o
		}, want{kind: Wait, reason: "MemberWithoutPod"}},
		{"unknown unstarted learner without pod: removed after grace", size(5), func() Observed {
			o := cluster(3)
			o.Members = append(o.Members, Member{ID: 77, IsLearner: true, UnhealthySince: t0.Add(-time.Minute)})
			return o
		}, want{kind: RemoveMember, id: 77, deletePod: no()}},
		{"unknown unstarted learner with annotated pod waits for it", size(5), func() Observed {
			o := cluster(3)
			o.Members = append(o.Members, Member{ID: 77, IsLearner: true})
			o.Pods = append(o.Pods, Pod{Name: "c-x", MemberID: 77, Phase: PodRunning, CreatedAt: t0.Add(-5 * time.Second)})
			return o
		}, want{kind: Wait, reason: "MemberStarting"}},
		{"learner pod running unready beyond grace is removed", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", false, false, true, 0)
			pod(&o, "c-new").CreatedAt = t0.Add(-3 * time.Minute)
			mem(&o, 99).UnhealthySince = t0.Add(-3 * time.Minute)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "MemberNotStarting"}},
		{"no second learner while one is in flight", size(7), threeAndLearner(true, true, true, 100), want{kind: Wait, reason: "LearnerCatchingUp"}},
		{"promotion waits while voters are degraded", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			dropPod(&o, mname(3)) // reachable member whose pod vanished is not alive
			dropPod(&o, mname(2))
			return o
		}, want{kind: Wait, reason: "Degraded"}},
	})
}

func TestCaughtUp(t *testing.T) {
	for _, c := range []struct {
		learner, leader, lag uint64
		want                 bool
	}{
		{0, 0, 1000, true},
		{100, 90, 1000, true},
		{40, 50, 1000, false}, // below etcd's 90%
		{45, 50, 1000, true},
		{9000, 10000, 1000, true},
		{8999, 10000, 1000, false},
		{999000, 1000000, 1000, true},
		{998999, 1000000, 1000, false},
		{9500, 10000, 100, false},
	} {
		if got := caughtUp(c.learner, c.leader, c.lag); got != c.want {
			t.Errorf("caughtUp(%d, %d, %d) = %v, want %v", c.learner, c.leader, c.lag, got, c.want)
		}
	}
}

// threeAndLearner is a healthy 3-member cluster with learner 99, c-new, in flight (see
// withLearner for started, reachable, withPod and its applied index idx).
func threeAndLearner(started, reachable, withPod bool, idx uint64) func() Observed {
	return func() Observed {
		o := cluster(3)
		withLearner(&o, 99, "c-new", started, reachable, withPod, idx)
		return o
	}
}
