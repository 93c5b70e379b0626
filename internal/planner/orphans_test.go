package planner

import (
	"strings"
	"testing"
	"time"
)

// The orphan rule: orphan pods go one at a time, only when a majority of the voters agree.
func TestPlanOrphans(t *testing.T) {
	runCases(t, []tcase{
		{"orphan pod is deleted", size(3), clusterWithPod(3, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)}, true), want{kind: DeletePod, name: "c-old"}},
		{"orphan without annotation is deleted", size(3), clusterWithPod(3, Pod{Name: "c-old", Phase: PodFailed, CreatedAt: t0.Add(-time.Hour)}, true), want{kind: DeletePod, name: "c-old"}},
		{"young orphan is left for later", size(3), clusterWithPod(3, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-2 * time.Second)}, false), want{kind: Done, check: func(t *testing.T, a Action) {
			if a.RequeueAfter != DefaultReplaceGoneAfter-2*time.Second {
				t.Errorf("requeue %v", a.RequeueAfter)
			}
		}}},
		{"orphan already deleting is not deleted again", size(3), clusterWithPod(3, Pod{Name: "c-old", MemberID: 42, Deleting: true, CreatedAt: t0.Add(-time.Hour)}, false), want{kind: Done}},
		{"pod annotated with an id whose member has another name is orphan", size(3), clusterWithPod(3, Pod{Name: "c-dup", MemberID: 2, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)}, true), want{kind: DeletePod, name: "c-dup"}},
		{"no orphan deletion before bootstrapped is recorded", size(3), func() Observed {
			o := cluster(3)
			o.Bootstrapped = false
			o.Pods = append(o.Pods, Pod{Name: "c-old", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: Done}},
		{"pending pod is never an orphan", size(5), func() Observed {
			o := cluster(3)
			o.Pending = &PendingMember{Name: "c-new", ID: 99, AddedAt: t0.Add(-time.Second)}
			o.Pods = append(o.Pods, Pod{Name: "c-new", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: AddLearner}},
		{"orphans are deleted even while a learner is in flight", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 100)
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-old"}},
		{"orphans are not touched without quorum", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Minute))
			crashloop(&o, 2, t0.Add(-time.Minute))
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: Wait, reason: "QuorumUnavailable"}},
		// One member listing only itself while the others' pods exist: its word alone is
		// not a quorum of the membership it shrank (a fork, fork.go), so nothing goes.
		{"a member alone lists only itself: the others' pods are not orphans on its word", size(3), func() Observed {
			o := cluster(3)
			dropMember(&o, 1)
			dropMember(&o, 2)
			o.LeaderID = 3
			witnessed(&o)
			return o
		}, want{kind: Wait, reason: "MembershipUnsettled", check: func(t *testing.T, a Action) {
			if !strings.Contains(a.Message, "only 1 of the 3") {
				t.Errorf("message %q", a.Message)
			}
		}}},
	})
}

// clusterWithPod is a healthy n-member cluster that also runs pod p; witnessed if every
// member's list was gathered (then a majority can tell p is no member's).
func clusterWithPod(n int, p Pod, witness bool) func() Observed {
	return func() Observed {
		o := cluster(n)
		o.Pods = append(o.Pods, p)
		if witness {
			witnessed(&o)
		}
		return o
	}
}
