package etcdbackup

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/schedule"
)

// cronScheduleOf is eb's cron schedule (v1's spec.backupPolicy.schedule and timeZone,
// stored as annotations), or nil when it has none.
func cronScheduleOf(eb *etcdv1beta2.EtcdBackup) (*schedule.Schedule, error) {
	return annotatedSchedule(eb, etcdv1beta2.BackupScheduleAnnotation, etcdv1beta2.BackupTimeZoneAnnotation, "spec.backupPolicy.schedule",
		fmt.Sprintf("a time zone (spec.backupPolicy.timeZone, annotation %s) without a schedule", etcdv1beta2.BackupTimeZoneAnnotation))
}

// annotatedSchedule parses the cron schedule and time zone eb stores in the annotations
// exprKey and tzKey (from the v1 field named field and its time zone), or nil when there
// is no schedule; a time zone alone is the error zoneAlone.
func annotatedSchedule(eb *etcdv1beta2.EtcdBackup, exprKey, tzKey, field, zoneAlone string) (*schedule.Schedule, error) {
	expr, tz := eb.Annotations[exprKey], eb.Annotations[tzKey]
	if expr == "" {
		if tz != "" {
			return nil, errors.New(zoneAlone)
		}
		return nil, nil
	}
	s, err := schedule.Parse(expr, tz)
	if err != nil {
		return nil, fmt.Errorf("%s (annotation %s): %w", field, exprKey, err)
	}
	return s, nil
}

// checkSchedule reports a schedule the operator cannot follow, as checkBackupSpec does
// for the spec: a spec problem, reported at once and not retried.
func checkSchedule(eb *etcdv1beta2.EtcdBackup) (reason, msg string) {
	s, err := cronScheduleOf(eb)
	if err != nil {
		return etcdv1beta2.ReasonBackupInvalidSpec, err.Error()
	}
	if s != nil && policyOf(eb).BackupIntervalInSecond > 0 {
		return etcdv1beta2.ReasonBackupInvalidSpec, "give a schedule or backupInterval (backupIntervalInSecond), not both"
	}
	return "", ""
}

// manualRunDue: the backup-now annotation holds a value not yet honoured.
func manualRunDue(eb *etcdv1beta2.EtcdBackup) bool {
	v := eb.Annotations[etcdv1beta2.BackupNowAnnotation]
	return v != "" && v != eb.Status.LastBackupNow
}

// cronDue is backupDue for a backup with a cron schedule: a failed run is retried (with
// the usual back-off); otherwise the next run is the schedule's first after the last
// scheduled run, or after the backup's creation for the first one.
func cronDue(eb *etcdv1beta2.EtcdBackup, s *schedule.Schedule, now time.Time) (time.Duration, bool) {
	if failedThisGeneration(eb) {
		return 0, true
	}
	due, _, next := s.Due(lastScheduleTime(eb), eb.CreationTimestamp.Time, now)
	if due {
		return 0, true
	}
	return next.Sub(now), false
}

func lastScheduleTime(eb *etcdv1beta2.EtcdBackup) time.Time {
	if t := eb.Status.LastScheduleTime; t != nil {
		return t.Time
	}
	return time.Time{}
}

// recordScheduledRun notes a stored backup in eb's status: the run it was for (a cron
// slot, or now for an interval), when the next one is, and the backup-now value it
// honoured. A manual run between two slots does not move the schedule.
func recordScheduledRun(eb *etcdv1beta2.EtcdBackup, now time.Time) (next time.Time) {
	eb.Status.LastBackupNow = eb.Annotations[etcdv1beta2.BackupNowAnnotation]
	if s, _ := cronScheduleOf(eb); s != nil {
		due, run, n := s.Due(lastScheduleTime(eb), eb.CreationTimestamp.Time, now)
		if due {
			eb.Status.LastScheduleTime = timePtr(run)
		}
		eb.Status.NextScheduleTime = timePtr(n)
		return n
	}
	if interval := policyOf(eb).Interval(); interval > 0 {
		eb.Status.LastScheduleTime = timePtr(now)
		eb.Status.NextScheduleTime = timePtr(now.Add(interval))
		return now.Add(interval)
	}
	eb.Status.NextScheduleTime = nil
	return time.Time{}
}

// noteNextRun sets status.nextScheduleTime when it changed, so that `kubectl get
// etcdbackup` shows when a periodic backup runs before its first run too; nothing is
// written while it stays the same.
func noteNextRun(s *scope, next time.Time) {
	var want *metav1.Time
	if !next.IsZero() {
		want = timePtr(next)
	}
	cur := s.eb.Status.NextScheduleTime
	if (cur == nil) == (want == nil) && (cur == nil || cur.Time.Equal(want.Time)) {
		return
	}
	s.eb.Status.NextScheduleTime = want
	s.write = true
}

// timePtr is t as status holds it: to the second, as the API serialises it.
func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}
