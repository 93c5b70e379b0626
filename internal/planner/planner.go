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
	// Paused: the user asked us to touch nothing, so nothing is touched, not even
	// orphan pods.
	if d.Paused {
		return wait(v1beta2.ReasonPaused, "reconciliation is paused (spec.paused); nothing is changed", 0)
	}
	// Fork: the answering members do not form one cluster; nothing is touched.
	if a, ok := planFork(d, o); ok {
		return a
	}
	// Size: there is no safe move towards an impossible target.
	if d.Size < 0 {
		return wait(v1beta2.ReasonInvalidSpec, fmt.Sprintf("size %d: a cluster needs at least one member, or 0 to hibernate", d.Size), 0)
	}
	// Recovery: a recorded recovery is finished before anything else.
	if o.Recovery != nil {
		return planRecovery(d, o)
	}
	if o.BackupRestore != nil { // backup restore, likewise (totalloss.go)
		return planBackupRestore(d, o)
	}
	// Hibernation: size 0 stops the pods and keeps the claims and the membership;
	// no rule below runs at size 0 (hibernate.go).
	if d.Size == 0 {
		return planHibernate(d, o)
	}
	// No endpoint answered MemberList (a serializable list answers without quorum, so
	// no etcd process is reachable at all): bootstrap, recreate, no members.
	if !o.MembersKnown || len(o.Members) == 0 {
		if !o.Bootstrapped && !formedOnce(o) {
			return planBootstrap(d, o)
		}
		if a, ok := planRecreateKnown(d, o); ok {
			return a
		}
		return planNoMembers(d, o)
	}
	v := newView(d, o)
	a := v.plan()
	a.ClearPending = v.clearPending
	if a.Kind == Done && v.orphanRequeue > 0 {
		a.RequeueAfter = v.orphanRequeue
	}
	return a
}

// plan applies the rules that need a member list, from recreate to rollout, in order.
func (v *view) plan() Action {
	for _, rule := range []func() (Action, bool){
		v.planRecreate,      // recreate: pods back on their data
		v.planQuorum,        // quorum
		v.planOrphan,        // orphan pods
		v.planInFlight,      // in flight: one membership change at a time
		v.planAliveQuorum,   // alive quorum
		v.planDead,          // dead members
		v.planCorrupt,       // corrupt: members etcd found CORRUPT
		v.planScaleDown,     // scale down
		v.planWaitUnhealthy, // grace: members within it
		v.planScaleUp,       // scale up
	} {
		if a, ok := rule(); ok {
			return a
		}
	}
	a := v.planUpgrade() // upgrade, else Done
	if a.Kind == Done {
		// NOSPACE first: a read-only cluster is an outage, a pending rollout is not.
		if m, ok := v.planMaintenance(); ok { // maintenance: NOSPACE, defragmentation
			return m
		}
	}
	if a.Kind == Done || a.Kind == RefuseUpgrade {
		if r, ok := v.planReconfigure(); ok { // rollout: rolling reconfiguration
			return r
		}
	}
	return a
}
