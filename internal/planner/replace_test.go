package planner

import (
	"testing"
	"time"
)

// The dead-member rule: a voter down past its grace is replaced, the one down longest first.
func TestPlanDeadMembers(t *testing.T) {
	runCases(t, []tcase{
		{"pod missing beyond gone grace: replace", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			unreachable(&o, 2, t0.Add(-time.Minute))
			return o
		}, want{kind: ReplaceMember, id: 2, name: mname(2), deletePod: no()}},
		{"pod missing but member still answers: replaced after grace", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			mem(&o, 2).UnhealthySince = t0.Add(-time.Minute)
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"crash-looping beyond grace: replace with pod", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 3, t0.Add(-DefaultReplaceUnhealthyAfter-time.Second))
			return o
		}, want{kind: ReplaceMember, id: 3, deletePod: yes()}},
		{"node not ready beyond grace: replace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-10*time.Minute))
			pod(&o, mname(3)).NodeNotReady = true
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"pod being deleted beyond gone grace: replace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-20*time.Second))
			pod(&o, mname(3)).Deleting = true
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"pod failed beyond gone grace: replace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-20*time.Second))
			pod(&o, mname(3)).Phase = PodFailed
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"two dead of 5: the one down longest first", size(5), func() Observed {
			o := cluster(5)
			crashloop(&o, 2, t0.Add(-10*time.Minute))
			crashloop(&o, 4, t0.Add(-20*time.Minute))
			return o
		}, want{kind: ReplaceMember, id: 4}},
		{"two dead of 5 after the first removal: the second", size(5), func() Observed {
			o := cluster(5)
			crashloop(&o, 2, t0.Add(-10*time.Minute))
			dropMember(&o, 4)
			dropPod(&o, mname(4))
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"after replacements the cluster regrows", size(5), func() Observed {
			o := cluster(5)
			dropMember(&o, 4)
			dropPod(&o, mname(4))
			dropMember(&o, 2)
			dropPod(&o, mname(2))
			o.RetiredNames = []string{mname(2), mname(4)}
			return o
		}, want{kind: AddLearner, check: func(t *testing.T, a Action) {
			if a.Name == mname(2) || a.Name == mname(4) {
				t.Errorf("reused a removed member's name %s", a.Name)
			}
		}}},
		{"leader dead, stale leader id: wait for election", size(3), crashlooping(3, 1), want{kind: Wait, reason: "NoLeader"}},
		{"leader dead, new leader elected: replace old leader", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			o.LeaderID = 2
			return o
		}, want{kind: ReplaceMember, id: 1}},
		{"dead member waits for the in-flight learner", size(3), func() Observed {
			o := cluster(2)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			o.Members = append(o.Members, Member{ID: 3, Name: mname(3), UnhealthySince: t0.Add(-time.Hour)})
			return o
		}, want{kind: PromoteLearner, id: 99}},
		{"dead member is replaced before an upgrade", size(3), func() Observed {
			o := cluster(3)
			for i := range o.Members {
				o.Members[i].Version = v36
				o.Pods[i].Version = v36
			}
			crashloop(&o, 3, t0.Add(-time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"even size 4 with one dead: replace", size(4), crashlooping(4, 4), want{kind: ReplaceMember, id: 4}},
		{"size 7 with three dead: replace one", size(7), func() Observed {
			o := cluster(7)
			crashloop(&o, 5, t0.Add(-time.Hour))
			crashloop(&o, 6, t0.Add(-2*time.Hour))
			crashloop(&o, 7, t0.Add(-3*time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 7}},
		{"1-member cluster whose pod crashed: quorum wait, never replace", size(1), func() Observed {
			o := cluster(1)
			crashloop(&o, 1, t0.Add(-time.Minute))
			return o
		}, want{kind: Wait, reason: "QuorumUnavailable"}},
	})
}
