package etcdcluster

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// updateStatus reports what a reconcile that planned a step found and did, in one
// sequence for every path: the planner's summary and conditions, then the conditions read
// off the pods, etcd's space and alarms, cordoned nodes and a fork, and, when the step
// ran, the Reconciled condition and the step's metrics. The status writer's deferred
// flush calls it; a reconcile that stopped before planning reports through the
// Reconciled condition alone (observeFailed, refuseSpec, flush).
func (r *Reconciler) updateStatus(c *etcdv1beta2.EtcdCluster, o *observation) {
	p := o.planned
	now := p.at.UTC().Format(timeFormat)
	r.applySummary(c, o, p.summary, p.action)
	if p.ran {
		var refused *notControlledError
		var refusedStep *refusedError // act_marker.go
		if errors.As(p.actErr, &refused) {
			// The planned step stays undone for as long as the object is there: say why
			// where the user looks, not only in an event.
			c.Status.Reason = refused.Error()
		} else if errors.As(p.actErr, &refusedStep) {
			c.Status.Reason = refusedStep.Error()
		}
	}
	r.reportPods(c, o, now)
	r.reportSpace(c, o, now)
	r.reportCordon(c, o, now)      // status_cordon.go
	r.reportFork(c, p.action, now) // status_fork.go
	r.recordUpgradeBackup(c, o, p) // act_upgradebackup.go
	if p.ran {
		r.reportReconciled(c, etcdv1beta2.ReasonActionFailed, p.stepErr, false, now)
		recordAction(c, p.action, p.actErr, p.waited)
	}
}

// applySummary copies the planner's summary into the CoreOS-shaped status; its
// conditions go through setCondition (plannerCondition).
func (r *Reconciler) applySummary(c *etcdv1beta2.EtcdCluster, o *observation, s planner.Summary, a planner.Action) {
	st := &c.Status
	now := r.Now().UTC().Format(timeFormat)
	recordVersionSince(st, o.planner) // status_versionsince.go, before bootstrapped is set
	if o.planner.MembersKnown {
		r.announceCoreOSAdoption(c, o) // observe_coreos.go
		st.Bootstrapped = true
		st.BootstrapMembers = nil
	}
	// Not during a recovery: the one member answering then belongs to the cluster being
	// seeded, which becomes the cluster only when the recovery finishes.
	if o.clusterID != 0 && st.Recovery == nil {
		st.ClusterID = etcdadmin.FormatID(o.clusterID)
	}
	// Keep "Creating" until the cluster has formed, as CoreOS did.
	switch {
	case !st.Bootstrapped && s.Phase != etcdv1beta2.ClusterPhaseFailed && s.Phase != etcdv1beta2.ClusterPhaseHibernated:
		st.Phase = etcdv1beta2.ClusterPhaseCreating
	default:
		st.Phase = s.Phase
	}
	st.Reason = s.Reason
	st.Size = len(o.planner.Members)
	if !o.planner.MembersKnown {
		st.Size = len(o.pods)
	}
	st.Selector = render.ClusterSelector(c.Name).String() // for the scale subresource
	st.ServiceName = render.ClientServiceName(c)
	st.ClientPort = etcdv1beta2.EtcdClientPort
	st.Members.Ready, st.Members.Unready = s.ReadyMembers, s.UnreadyMembers
	reportMembers(&st.Members, o.members, o.statuses, memberDetailsLimit(c.Spec.Size)) // status_members.go
	if s.CurrentVersion != "" {
		st.CurrentVersion = s.CurrentVersion
	}
	st.TargetVersion = ""
	if s.TargetVersion != "" && s.TargetVersion != st.CurrentVersion {
		st.TargetVersion = s.TargetVersion
	}
	for _, cond := range s.Conditions {
		r.setCondition(c, plannerCondition(cond, findCondition(c, cond.Type)), now)
	}
}

// timeFormat is how condition times are written, as in CoreOS's status.
const timeFormat = time.RFC3339

// conditionUpdate is one condition as a reconcile finds it, and what it means for the
// condition's events: what each condition's own function (plannerCondition,
// podsHealthyCondition, ...) computes from what the reconcile found, without side effects.
type conditionUpdate struct {
	Type            etcdv1beta2.ClusterConditionType
	Status          bool
	Reason, Message string
	// Fail names the failure the condition reports, for the event rule ("": no failure);
	// Recovered says a failure is over. Neither: a state in between, which announces
	// nothing (a crash-looping container restarting, a cluster still forming).
	Fail      string
	Recovered bool
	// EventReason and EventMessage are the event's reason and text when they are not
	// Reason and Message.
	EventReason, EventMessage string
	// announcedByCaller: the failure is announced by an event of the caller's own (a
	// failed step's ActionFailed), or needs none; it is only remembered, so that its end
	// is announced.
	announcedByCaller bool
}

// setCondition is the one setter of the cluster's conditions. It sets u, keeping the
// transition time unless the status flips, and emits the events of the one event rule:
//
//   - a warning, with u's reason, when a failure appears or changes: u.Fail is not empty
//     and not the failure last announced for this condition of this cluster;
//   - a normal event, with u's reason and "Type=Status: message", when a failure that was
//     announced is over (u.Recovered);
//   - nothing otherwise: a failure that persists is announced once, and states in
//     between neither repeat it nor end it.
//
// What was announced is memory (eventMemo), not status: a restarted operator announces a
// failure that persists once more, and does not announce the end of one it did not
// announce.
//
// This was the rule of PodsHealthy, SpecApplied, OffCordonedNodes and Reconciled
// (updateCondition + announce), and the one their tests hold: a crash loop is announced
// once and is over only when the pods are Ready, which no rule judged from status can say.
// The planner's conditions had another (an event whenever the status flipped or a
// condition was added True, read off status, normal but for Available turning False), as
// had the alarms (off status) and Forked (on a flip). Under this rule: Available keeps
// its events (plannerCondition); Recovering, Scaling and Upgrading no longer announce
// their flips, which the steps' own events announce; the alarms and Forked announce
// across an operator restart as the conditions above do, and the end of a fork reads
// "Forked=False: ...".
func (r *Reconciler) setCondition(c *etcdv1beta2.EtcdCluster, u conditionUpdate, now string) {
	updateCondition(c, u.Type, u.Status, u.Reason, u.Message, now)
	cluster := clusterKey(c)
	reason, msg := cmp.Or(u.EventReason, u.Reason), cmp.Or(u.EventMessage, u.Message)
	prev, _ := r.events.get(cluster, u.Type)
	switch {
	case u.Fail != "" && u.announcedByCaller:
		r.events.set(cluster, u.Type, announced{key: u.Fail})
	case u.Fail != "":
		if prev.key != u.Fail {
			r.Recorder.Event(c, corev1.EventTypeWarning, reason, msg)
			r.events.set(cluster, u.Type, announced{key: u.Fail})
		}
	case u.Recovered && prev.key != "":
		r.Recorder.Eventf(c, corev1.EventTypeNormal, reason, "%s=%s: %s", u.Type, conditionStatus(u.Status), msg)
		r.events.set(cluster, u.Type, announced{})
	}
}

func conditionStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// plannerCondition is one of the planner's conditions (Available, Recovering, Scaling,
// Upgrading) given the condition as status holds it (nil: none yet). Available False is
// a failure: announced ("Available=False: message") when it turns False, only remembered
// while the cluster forms or when an operator starts on a cluster already unavailable,
// so that Available turning True is announced in every case. The other three report
// progress, which the steps' own events announce: no event of their own.
func plannerCondition(cond planner.Condition, prev *etcdv1beta2.ClusterCondition) conditionUpdate {
	u := conditionUpdate{Type: cond.Type, Status: cond.Status, Reason: cond.Reason, Message: cond.Message}
	if u.Type != etcdv1beta2.ClusterConditionAvailable {
		return u
	}
	u.Reason = cmp.Or(u.Reason, string(u.Type))
	u.Recovered = cond.Status
	if !cond.Status && !hibernationReason(cond.Reason) { // stopped on purpose: no failure (metrics_hibernation.go)
		u.Fail = string(etcdv1beta2.ClusterConditionAvailable) + "=False"
		u.EventMessage = fmt.Sprintf("%s=False: %s", u.Type, u.Message)
		u.announcedByCaller = prev == nil || prev.Status != corev1.ConditionTrue
	}
	return u
}

// updateCondition sets one condition, keeping its transition time unless the status
// flips. It reports whether the status flipped, or the condition is new.
func updateCondition(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType, status bool, reason, msg, now string) (flipped, added bool) {
	want := corev1.ConditionFalse
	if status {
		want = corev1.ConditionTrue
	}
	for i := range c.Status.Conditions {
		cur := &c.Status.Conditions[i]
		if cur.Type != t {
			continue
		}
		flipped = cur.Status != want
		if flipped {
			cur.LastTransitionTime = now
		}
		if flipped || cur.Reason != reason || cur.Message != msg {
			cur.LastUpdateTime = now
		}
		cur.Status, cur.Reason, cur.Message = want, reason, msg
		return flipped, false
	}
	c.Status.Conditions = append(c.Status.Conditions, etcdv1beta2.ClusterCondition{
		Type: t, Status: want, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now,
	})
	return false, true
}
