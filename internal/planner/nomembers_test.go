package planner

import (
	"testing"
	"time"
)

// The no-members rule: a formed cluster of which no endpoint answers is waited for or reported
// lost, never re-created.
func TestPlanNoMembers(t *testing.T) {
	runCases(t, []tcase{
		{"bootstrapped cluster with no pods is lost, not re-created", size(3), func() Observed {
			return Observed{Now: t0, Bootstrapped: true}
		}, want{kind: QuorumLost, reason: "AllMembersLost"}},
		{"bootstrapped, no endpoint answers, a pod is ready", size(3), func() Observed {
			o := cluster(3)
			o.MembersKnown, o.Members = false, nil
			return o
		}, want{kind: Wait, reason: "MembersUnknown"}},
		{"bootstrapped, no endpoint answers, all pods down briefly", size(3), func() Observed {
			o := cluster(3)
			o.MembersKnown, o.Members = false, nil
			for i := range o.Pods {
				o.Pods[i].Ready, o.Pods[i].UnhealthySince = false, t0.Add(-time.Minute)
			}
			return o
		}, want{kind: Wait, reason: "MembersUnknown"}},
		{"bootstrapped, no endpoint answers, all pods down for long", size(3), func() Observed {
			o := cluster(3)
			o.MembersKnown, o.Members = false, nil
			for i := range o.Pods {
				o.Pods[i].Ready, o.Pods[i].UnhealthySince = false, t0.Add(-time.Hour)
			}
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
	})
}
