package etcdcluster

import (
	"errors"
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
	if p.ran {
		r.reportReconciled(c, etcdv1beta2.ReasonActionFailed, p.stepErr, false, now)
		recordAction(c, p.action, p.actErr, p.waited)
	}
}

// applySummary copies the planner's summary into the CoreOS-shaped status, keeping
// condition transition times stable and emitting an event when a condition flips.
func (r *Reconciler) applySummary(c *etcdv1beta2.EtcdCluster, o *observation, s planner.Summary, a planner.Action) {
	st := &c.Status
	now := r.Now().UTC().Format(timeFormat)
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
	case !st.Bootstrapped && s.Phase != planner.PhaseFailed:
		st.Phase = etcdv1beta2.ClusterPhaseCreating
	default:
		st.Phase = etcdv1beta2.ClusterPhase(s.Phase)
	}
	st.Reason = s.Reason
	st.Size = len(o.planner.Members)
	if !o.planner.MembersKnown {
		st.Size = len(o.pods)
	}
	st.Selector = render.ClusterSelector(c.Name).String() // for the scale subresource
	st.ServiceName = render.ClientServiceName(c)
	st.ClientPort = etcdv1beta2.EtcdClientPort
	st.Members = etcdv1beta2.MembersStatus{Ready: s.ReadyMembers, Unready: s.UnreadyMembers}
	if s.CurrentVersion != "" {
		st.CurrentVersion = s.CurrentVersion
	}
	st.TargetVersion = ""
	if s.TargetVersion != "" && s.TargetVersion != st.CurrentVersion {
		st.TargetVersion = s.TargetVersion
	}
	for _, cond := range s.Conditions {
		r.setCondition(c, etcdv1beta2.ClusterConditionType(cond.Type), cond.Status, cond.Reason, cond.Message, now)
	}
}

// timeFormat is how condition times are written, as in CoreOS's status.
const timeFormat = time.RFC3339

func (r *Reconciler) setCondition(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType, status bool, reason, msg, now string) {
	flipped, added := updateCondition(c, t, status, reason, msg, now)
	if flipped || added && status {
		want := corev1.ConditionFalse
		if status {
			want = corev1.ConditionTrue
		}
		r.conditionEvent(c, t, want, reason, msg)
	}
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

func (r *Reconciler) conditionEvent(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType, s corev1.ConditionStatus, reason, msg string) {
	kind := corev1.EventTypeNormal
	if t == etcdv1beta2.ClusterConditionAvailable && s != corev1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	if reason == "" {
		reason = string(t)
	}
	r.Recorder.Eventf(c, kind, reason, "%s=%s: %s", t, s, msg)
}
