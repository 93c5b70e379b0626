package etcdbackup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// cronBackup is pvcBackup on a cron schedule instead of an interval, created at testStart
// (10:00 UTC).
func cronBackup(ns, schedule, tz string) *etcdv1beta2.EtcdBackup {
	eb := pvcBackup(ns, 0)
	eb.CreationTimestamp = metav1.NewTime(testStart)
	eb.Annotations = map[string]string{etcdv1beta2.BackupScheduleAnnotation: schedule}
	if tz != "" {
		eb.Annotations[etcdv1beta2.BackupTimeZoneAnnotation] = tz
	}
	return eb
}

// A schedule runs at its slots, not at creation; status says when the next one is, and
// a run records its slot.
func TestCronScheduleRunsAtItsSlots(t *testing.T) {
	h := newHarness(t, cronBackup("cron", "30 * * * *", ""), mainCluster("cron")...)
	res := h.reconcile()
	if h.pod() != nil || res.RequeueAfter != 30*time.Minute {
		t.Fatalf("at creation (10:00): pod %v, requeue %v; want none and 30m", h.pod() != nil, res.RequeueAfter)
	}
	if n := h.backup().Status.NextScheduleTime; n == nil || !n.Time.Equal(testStart.Add(30*time.Minute)) {
		t.Fatalf("nextScheduleTime %v, want 10:30", n)
	}
	h.clock.Advance(30 * time.Minute)
	h.reconcile()
	h.mustPod()
	h.clock.Advance(time.Minute)
	h.succeedPod(storedResult())
	res = h.reconcile()
	st := h.backup().Status
	if st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(testStart.Add(30*time.Minute)) ||
		st.NextScheduleTime == nil || !st.NextScheduleTime.Time.Equal(testStart.Add(90*time.Minute)) {
		t.Fatalf("after the 10:30 run: last %v next %v; want 10:30 and 11:30", st.LastScheduleTime, st.NextScheduleTime)
	}
	if res.RequeueAfter != 59*time.Minute {
		t.Errorf("requeue %v after the run at 10:31, want 59m (to 11:30)", res.RequeueAfter)
	}
	// Nothing is due until 11:30, and nothing is written meanwhile.
	h.clock.Advance(58 * time.Minute)
	before := h.backup().ResourceVersion
	h.reconcile()
	if h.pod() != nil || h.backup().ResourceVersion != before {
		t.Errorf("at 11:29: pod %v, status rewritten %v", h.pod() != nil, h.backup().ResourceVersion != before)
	}
}

// After an outage that missed several slots, one backup catches up, recorded as the
// latest missed slot, and the schedule goes on from there.
func TestCronScheduleCatchesUpOnce(t *testing.T) {
	eb := cronBackup("catchup", "@hourly", "")
	h := newHarness(t, eb, mainCluster("catchup")...)
	h.clock.Advance(5*time.Hour + 10*time.Minute) // the operator was down from 10:00 to 15:10
	h.reconcile()
	h.succeedPod(storedResult())
	h.reconcile()
	st := h.backup().Status
	if st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(testStart.Add(5*time.Hour)) ||
		!st.NextScheduleTime.Time.Equal(testStart.Add(6*time.Hour)) {
		t.Fatalf("last %v next %v; want 15:00 and 16:00", st.LastScheduleTime, st.NextScheduleTime)
	}
	h.reconcile()
	if h.pod() != nil {
		t.Error("a second catch-up run started")
	}
}

// A failed scheduled run is retried with the back-off, not left until the next slot.
func TestCronScheduleRetriesAFailedRun(t *testing.T) {
	h := newHarness(t, cronBackup("retry", "@daily", ""), mainCluster("retry")...)
	h.clock.Advance(14 * time.Hour) // midnight
	h.reconcile()
	h.finishPod("Failed", 1, "Error", "disk full")
	res := h.reconcile()
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Fatalf("after a failure: requeue %v, want a short back-off", res.RequeueAfter)
	}
	h.clock.Advance(res.RequeueAfter)
	h.reconcile()
	if h.pod() == nil {
		t.Fatal("the failed run was not retried")
	}
}

// backup-now takes one backup at once, even of a one-shot backup that already succeeded,
// and each new value takes one more; the schedule does not move.
func TestBackupNow(t *testing.T) {
	h := newHarness(t, cronBackup("now", "0 2 * * *", "Europe/Berlin"), mainCluster("now")...)
	h.reconcile()
	if h.pod() != nil {
		t.Fatal("a scheduled backup ran at creation")
	}
	annotate := h.backupNow
	annotate("1")
	h.reconcile()
	h.succeedPod(storedResult())
	h.reconcile()
	st := h.backup().Status
	if st.LastBackupNow != "1" || st.LastScheduleTime != nil {
		t.Fatalf("after backup-now=1: lastBackupNow %q lastScheduleTime %v; want 1 and no slot taken", st.LastBackupNow, st.LastScheduleTime)
	}
	// 02:00 in Berlin is 01:00 UTC in December.
	if want := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC); st.NextScheduleTime == nil || !st.NextScheduleTime.Time.Equal(want) {
		t.Errorf("nextScheduleTime %v, want %v", st.NextScheduleTime, want)
	}
	h.reconcile()
	if h.pod() != nil {
		t.Fatal("the same backup-now value ran twice")
	}
	h.clock.Advance(DefaultBackupNowSpacing)
	annotate("2")
	h.reconcile()
	if h.pod() == nil {
		t.Fatal("a new backup-now value did not run")
	}
}

// backup-now values sooner than DefaultBackupNowSpacing after the last run are not a backup
// each: they are deferred (reported), and one run honours them once the spacing passed.
func TestDefaultBackupNowSpacing(t *testing.T) {
	h := newHarness(t, cronBackup("now", "0 2 * * *", "Europe/Berlin"), mainCluster("now")...)
	h.reconcile()
	annotate := h.backupNow
	annotate("1")
	h.reconcile()
	h.succeedPod(storedResult())
	h.reconcile()
	h.drainEvents()
	runs := 0
	for i := 2; i <= 30; i++ {
		h.clock.Advance(2 * time.Second)
		annotate(fmt.Sprint(i))
		res := h.reconcile()
		if p := h.pod(); p != nil {
			runs++
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > DefaultBackupNowSpacing {
			t.Fatalf("value %d: requeue after %s, want within the spacing", i, res.RequeueAfter)
		}
	}
	if runs != 0 {
		t.Fatalf("%d backups for 29 backup-now values within a minute of the last", runs)
	}
	deferred := false
	for _, e := range h.drainEvents() {
		deferred = deferred || strings.Contains(e, etcdv1beta2.EventReasonBackupNowDeferred)
	}
	if !deferred {
		t.Error("no BackupNowDeferred event")
	}
	h.clock.Advance(DefaultBackupNowSpacing)
	h.reconcile()
	if h.pod() == nil {
		t.Fatal("the deferred backup-now did not run once the spacing passed")
	}
}

// A schedule the operator cannot follow is refused at once with the field named.
func TestCronScheduleInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		eb   *etcdv1beta2.EtcdBackup
		want string
	}{
		"syntax":    {cronBackup("bad", "every day", ""), "spec.backupPolicy.schedule"},
		"time zone": {cronBackup("bad", "@daily", "Mars/Olympus"), "IANA"},
		"both": {func() *etcdv1beta2.EtcdBackup {
			eb := cronBackup("bad", "@daily", "")
			eb.Spec.BackupPolicy.BackupIntervalInSecond = 60
			return eb
		}(), "not both"},
		"zone, no cron": {func() *etcdv1beta2.EtcdBackup {
			eb := pvcBackup("bad", 0)
			eb.Annotations = map[string]string{etcdv1beta2.BackupTimeZoneAnnotation: "UTC"}
			return eb
		}(), "without a schedule"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, tc.eb, mainCluster("bad")...)
			h.reconcile()
			if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonBackupInvalidSpec || !strings.Contains(c.Message, tc.want) {
				t.Errorf("condition %+v, want %s naming %q", c, etcdv1beta2.ReasonBackupInvalidSpec, tc.want)
			}
			if h.pod() != nil {
				t.Error("a backup ran on an invalid schedule")
			}
		})
	}
}

// A scheduled PVC backup is periodic: its pod names each backup by revision and time and
// applies maxBackups and maxAge, as an interval backup's does.
func TestCronBackupPodIsPeriodic(t *testing.T) {
	eb := cronBackup("pod", "@hourly", "")
	eb.Spec.BackupPolicy.MaxAgeInSecond = 7 * 24 * 3600
	h := newHarness(t, eb, mainCluster("pod")...)
	h.clock.Advance(time.Hour)
	h.reconcile()
	args := strings.Join(h.mustPod().Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--periodic") || !strings.Contains(args, "--max-backups=3") || !strings.Contains(args, "--max-age=168h0m0s") {
		t.Errorf("backup pod args %q, want --periodic --max-backups=3 --max-age=168h0m0s", args)
	}
}

// backupNow sets the backup-now annotation to v, as a user asking for one more run does.
func (h *harness) backupNow(v string) {
	h.t.Helper()
	eb := h.backup()
	eb.Annotations[etcdv1beta2.BackupNowAnnotation] = v
	if err := h.c.Update(h.ctx, eb); err != nil {
		h.t.Fatal(err)
	}
}
