package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/schedule"
)

// Space maintenance glue: the settings into the planner's Desired, the recorded run and
// the alarms into its Observed, and the steps it plans (Defragment, Compact, DisarmAlarm,
// FinishMaintenance) against etcd, each recorded in status.maintenance and an event.

// defragTimeout bounds one member's defragmentation. etcd rewrites the whole database
// file; a few GiB take tens of seconds on a slow disk.
const defragTimeout = 5 * time.Minute

// Event reasons of the maintenance steps.
const (
	eventDefragmented = "Defragmented"
	eventCompacted    = "Compacted"
	eventDisarmed     = etcdv1beta2.ReasonAlarmDisarmed
)

// maintenanceSettings reads the v1beta2 annotations: the planner's settings, the schedule
// (nil when none), and a warning for each annotation that is not used as written. A bad
// annotation disables only what it sets: membership repair never waits on it.
func maintenanceSettings(c *etcdv1beta2.EtcdCluster) (planner.MaintenanceSpec, *schedule.Schedule, []string) {
	spec := planner.MaintenanceSpec{QuotaBackendBytes: render.QuotaBackendBytes(c)}
	var warnings []string
	a := c.Annotations
	if v := a[etcdv1beta2.DefragmentationThresholdAnnotation]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < etcdv1beta2.MinDefragmentationThresholdPercent || n > etcdv1beta2.MaxDefragmentationThresholdPercent {
			warnings = append(warnings, fmt.Sprintf("%s=%q is not a whole number from %d to %d; no threshold-triggered defragmentation",
				etcdv1beta2.DefragmentationThresholdAnnotation, v, etcdv1beta2.MinDefragmentationThresholdPercent, etcdv1beta2.MaxDefragmentationThresholdPercent))
		} else {
			spec.DefragThresholdPercent = n
		}
	}
	var sched *schedule.Schedule
	if v := a[etcdv1beta2.DefragmentationScheduleAnnotation]; v != "" {
		s, err := schedule.Parse(v, a[etcdv1beta2.DefragmentationTimeZoneAnnotation])
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s / %s: %v; no scheduled defragmentation",
				etcdv1beta2.DefragmentationScheduleAnnotation, etcdv1beta2.DefragmentationTimeZoneAnnotation, err))
		} else {
			sched = s
		}
	}
	return spec, sched, warnings
}

// observeMaintenance fills the planner's SpaceObserved: the alarms, the run recorded in
// status, and whether a schedule slot is due (the slot is kept for act to record).
func (o *observation) observeMaintenance(c *etcdv1beta2.EtcdCluster, sched *schedule.Schedule, now time.Time) {
	s := &o.planner.Space
	s.AlarmsKnown = o.space.alarmsKnown
	for _, al := range o.space.alarms {
		s.Alarms = append(s.Alarms, planner.Alarm{MemberID: al.MemberID, Type: al.Type})
	}
	ms := c.Status.Maintenance
	if ms != nil {
		s.Run = plannerRun(ms.Run)
		if ms.LastDefragmentationTime != nil {
			s.LastFinished = ms.LastDefragmentationTime.Time
		}
	}
	if sched != nil {
		var last time.Time
		if ms != nil && ms.LastScheduleTime != nil {
			last = ms.LastScheduleTime.Time
		}
		due, slot, _ := sched.Due(last, c.CreationTimestamp.Time, now)
		s.ScheduleDue, o.scheduleSlot = due, slot
	}
}

// plannerRun is the recorded run in the planner's terms; IDs that do not parse are
// dropped (the member is then defragmented again, which is harmless).
func plannerRun(r *etcdv1beta2.MaintenanceRun) *planner.MaintenanceRun {
	if r == nil {
		return nil
	}
	out := &planner.MaintenanceRun{Trigger: r.Trigger, StartedAt: r.StartedAt.Time, Revision: r.CompactedRevision}
	for _, s := range r.Defragmented {
		if id, err := etcdadmin.ParseID(s); err == nil {
			out.Done = append(out.Done, id)
		}
	}
	return out
}

// actMaintenance performs one maintenance step.
func (r *Reconciler) actMaintenance(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	if a.Kind == planner.FinishMaintenance {
		r.finishRun(c, a)
		return nil
	}
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	switch a.Kind {
	case planner.Defragment:
		return r.defragment(ctx, c, o, admin, a)
	case planner.Compact:
		return r.compact(ctx, c, o, admin, a)
	case planner.DisarmAlarm:
		if err := admin.Disarm(ctx, a.Alarm, a.ID); err != nil {
			return err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, eventDisarmed, "%s disarmed: %s", a.Alarm, a.Message)
		o.disarmed(a)
		if a.Alarm == planner.AlarmNoSpace {
			r.finishRun(c, a)
		}
		return nil
	}
	return fmt.Errorf("not a maintenance step: %v", a.Kind)
}

// defragment records the run (first step of a run: before acting, so a restarted
// operator continues it), defragments the member and records it as done.
func (r *Reconciler) defragment(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, admin *etcdadmin.Admin, a planner.Action) error {
	if r.startRun(c, o, a) {
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
	}
	res, err := admin.DefragmentMember(ctx, a.ID, defragTimeout)
	if err != nil {
		return err
	}
	run := c.Status.Maintenance.Run
	run.Defragmented = append(run.Defragmented, etcdadmin.FormatID(a.ID))
	run.FreedBytes += res.Freed()
	r.Recorder.Eventf(c, corev1.EventTypeNormal, eventDefragmented, "member %s (%s) defragmented (%s): database %d → %d bytes, %d freed",
		a.Name, etcdadmin.FormatID(a.ID), a.Trigger, res.Before, res.After, res.Freed())
	return nil
}

// compact compacts the history for a NOSPACE remediation and starts (or restarts) its
// round of defragmentations.
func (r *Reconciler) compact(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, admin *etcdadmin.Admin, a planner.Action) error {
	if r.startRun(c, o, a) {
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
	}
	if err := admin.Compact(ctx, a.Revision); err != nil {
		return err
	}
	run := c.Status.Maintenance.Run
	run.CompactedRevision, run.Defragmented = a.Revision, nil
	r.Recorder.Eventf(c, corev1.EventTypeNormal, eventCompacted, "history compacted at revision %d (%s); defragmenting each member over %d%% of its quota next",
		a.Revision, a.Trigger, 100-planner.NoSpaceMarginPercent)
	return nil
}

// disarmed takes the alarms etcd has just disarmed out of the observation, so that this
// reconcile's status already reports them cleared: the alarm list was read before the
// disarm, and a NOSPACE condition left at NoSpaceRemediating would wait for the next
// reconcile, which nothing may trigger for a steady resync.
func (o *observation) disarmed(a planner.Action) {
	o.space.alarms = slices.DeleteFunc(o.space.alarms, func(al etcdadmin.Alarm) bool {
		return al.Type == a.Alarm && (a.ID == 0 || al.MemberID == a.ID)
	})
	if a.Alarm == planner.AlarmNoSpace {
		o.noSpaceReason, o.noSpaceMessage = "", ""
	}
}

// startRun records a new run when none of a's trigger is recorded; it reports whether
// it did.
func (r *Reconciler) startRun(c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) bool {
	if c.Status.Maintenance == nil {
		c.Status.Maintenance = &etcdv1beta2.MaintenanceStatus{}
	}
	ms := c.Status.Maintenance
	if ms.Run != nil && ms.Run.Trigger == a.Trigger {
		return false
	}
	ms.Run = &etcdv1beta2.MaintenanceRun{Trigger: a.Trigger, StartedAt: metav1.NewTime(r.Now())}
	if a.Trigger == planner.TriggerSchedule && !o.scheduleSlot.IsZero() {
		slot := metav1.NewTime(o.scheduleSlot)
		ms.LastScheduleTime = &slot
	}
	return true
}

// finishRun forgets the run and records its end.
func (r *Reconciler) finishRun(c *etcdv1beta2.EtcdCluster, a planner.Action) {
	ms := c.Status.Maintenance
	if ms == nil || ms.Run == nil {
		return
	}
	now := metav1.NewTime(r.Now())
	ms.LastDefragmentationTime, ms.LastTrigger, ms.LastFreedBytes = &now, ms.Run.Trigger, ms.Run.FreedBytes
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonDefragmentationFinished, "%s run finished: %d members defragmented, %d bytes freed",
		ms.Run.Trigger, len(ms.Run.Defragmented), ms.Run.FreedBytes)
	ms.Run = nil
	recordDefragmentation(c)
}

// noSpaceProgress is the SpaceAvailable condition while the operator remediates NOSPACE:
// the reason and message of the planned step ("" when the plan is about something else).
func noSpaceProgress(a planner.Action) (reason, msg string) {
	switch a.Reason {
	case etcdv1beta2.ReasonNoSpaceRemediating, etcdv1beta2.ReasonNoSpaceDataTooLarge:
		return a.Reason, a.Message
	}
	return "", ""
}

// observeMaintenance reads the maintenance settings, warns (an event) about annotations
// not used as written, and fills the planner's view of space and runs.
func (r *Reconciler) observeMaintenance(c *etcdv1beta2.EtcdCluster, o *observation) planner.MaintenanceSpec {
	spec, sched, warnings := maintenanceSettings(c)
	for _, w := range warnings {
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.EventReasonInvalidAnnotation, w)
	}
	o.observeMaintenance(c, sched, r.Now())
	return spec
}
