package planner

import (
	"testing"
	"time"
)

// The grace rule: a voter down within its grace is waited for, until the grace ends.
func TestPlanWithinGrace(t *testing.T) {
	runCases(t, []tcase{
		{"no add while a member is down within grace", size(5), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-10*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy", check: func(t *testing.T, a Action) {
			if want := DefaultReplaceUnhealthyAfter - 10*time.Second; a.RequeueAfter != want {
				t.Errorf("requeue %v, want %v (the grace's end)", a.RequeueAfter, want)
			}
		}}},
		{"pod missing within gone grace: wait", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			unreachable(&o, 2, t0.Add(-3*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"pod missing, nothing recorded yet: grace starts now", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			unreachable(&o, 2, time.Time{})
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"crash-looping within grace: wait", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 3, t0.Add(-30*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"DNS lag: pod running, member unreachable 60s after restart: wait", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-60*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"recreated pod gets full grace despite old unhealthy record", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-time.Hour))
			pod(&o, mname(3)).CreatedAt = t0.Add(-5 * time.Second)
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
	})
}
