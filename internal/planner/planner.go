package planner

import (
	"fmt"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Plan returns the single next safe action. It applies the rules of the package
// documentation in their order; the first that applies wins.
func Plan(d Desired, o Observed) Action {
	d = d.withDefaults()
	a := planRules(d, o)
	if createsPod(a.Kind) {
		a.AsRunning = NewPodsAsRunning(d, o) // asrunning.go
	}
	return a
}

// planRules is Plan without what it adds to every action.
func planRules(d Desired, o Observed) Action {
	// 1. Paused: the user asked us to touch nothing, so nothing is touched, not even
	// orphan pods.
	if d.Paused {
		return wait(v1beta2.ReasonPaused, "reconciliation is paused (spec.paused); nothing is changed", 0)
	}
	// 1b. A fork: the answering members do not form one cluster; nothing is touched.
	if a, ok := planFork(d, o); ok {
		return a
	}
	// 2. Invalid size: there is no safe move towards an impossible target.
	if d.Size < 0 {
		return wait(v1beta2.ReasonInvalidSpec, fmt.Sprintf("size %d: a cluster needs at least one member, or 0 to hibernate", d.Size), 0)
	}
	// 3. A recorded recovery is finished before anything else.
	if o.Recovery != nil {
		return planRecovery(d, o)
	}
	if o.BackupRestore != nil { // 3b. likewise a restore from backup (totalloss.go)
		return planBackupRestore(d, o)
	}
	// 2b. Size 0: hibernation stops the pods and keeps the claims and the membership;
	// no rule below runs at size 0 (hibernate.go).
	if d.Size == 0 {
		return planHibernate(d, o)
	}
	// No endpoint answered MemberList (a serializable list answers without quorum, so
	// no etcd process is reachable at all): rules 4 to 6.
	if !o.MembersKnown || len(o.Members) == 0 {
		if !o.Bootstrapped && !formedOnce(o) {
			return planBootstrap(d, o) // 4
		}
		if a, ok := planRecreateKnown(d, o); ok { // 5
			return a
		}
		return planNoMembers(d, o) // 6
	}
	v := newView(d, o)
	a := v.plan()
	a.ClearPending = v.clearPending
	if a.Kind == Done && v.orphanRequeue > 0 {
		a.RequeueAfter = v.orphanRequeue
	}
	return a
}

// plan applies rules 5 and 7 to 16, the rules that need a member list, in order.
func (v *view) plan() Action {
	for _, rule := range []func() (Action, bool){
		v.planRecreate,      // 5. pods back on their data
		v.planQuorum,        // 7. quorum
		v.planOrphan,        // 8. orphan pods
		v.planInFlight,      // 9. one membership change at a time
		v.planAliveQuorum,   // 10. alive quorum
		v.planDead,          // 11. dead members
		v.planCorrupt,       // 11b. members etcd found CORRUPT
		v.planScaleDown,     // 12. scale down
		v.planWaitUnhealthy, // 13. members within their grace
		v.planScaleUp,       // 14. scale up
	} {
		if a, ok := rule(); ok {
			return a
		}
	}
	a := v.planUpgrade() // 15. upgrade, else Done
	if a.Kind == Done {
		// NOSPACE first: a read-only cluster is an outage, a pending rollout is not.
		if m, ok := v.planMaintenance(); ok { // 16. NOSPACE, defragmentation
			return m
		}
	}
	if a.Kind == Done || a.Kind == RefuseUpgrade {
		if r, ok := v.planReconfigure(); ok { // 17. rolling reconfiguration
			return r
		}
	}
	return a
}
