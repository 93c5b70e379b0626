package planner

import (
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planNoMembers is the no-members rule: a cluster that has formed (bootstrapped, or a pod proves
// it) of which no endpoint answered MemberList, and no pod to put back on its data
// (the recreate rule).
//   - no pod at all → QuorumLost: the data is gone; only a restore can help, and
//     re-bootstrapping would silently serve an empty cluster under the old name.
//   - pods exist → Wait, or QuorumLost (a report only) once every pod has been unready
//     for QuorumLossGrace. Without a member list no survivor can be named, so nothing
//     destructive is possible.
func planNoMembers(d Desired, o Observed) Action {
	if len(o.Pods) == 0 {
		return planTotalLoss(d, o) // totalloss.go
	}
	var lastDown time.Time
	for i := range o.Pods {
		p := &o.Pods[i]
		if p.Ready && !p.gone() {
			return wait(v1beta2.ReasonMembersUnknown, "no etcd endpoint answered MemberList; waiting", requeueWait)
		}
		since := p.UnhealthySince
		if since.IsZero() {
			since = o.Now
		}
		if since.After(lastDown) {
			lastDown = since
		}
	}
	if elapsed := o.Now.Sub(lastDown); elapsed < d.QuorumLossGrace {
		return wait(v1beta2.ReasonMembersUnknown, "no etcd endpoint answers and no member pod is ready", remaining(d.QuorumLossGrace, elapsed))
	}
	return Action{Kind: QuorumLost, Reason: v1beta2.ReasonNoEndpoint,
		Message: fmt.Sprintf("no etcd endpoint has answered and no member pod has been ready for %s; no survivor can be identified", d.QuorumLossGrace)}
}
