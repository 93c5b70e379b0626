package etcdbackup

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// backupDue decides from status alone: a backup is due unless its Succeeded condition is
// True for the current generation and, for a periodic one, the interval since
// lastSuccessDate has not passed.
func TestBackupDue(t *testing.T) {
	now := testStart
	withCondition := func(eb *etcdv1beta2.EtcdBackup, status metav1.ConditionStatus, gen int64) *etcdv1beta2.EtcdBackup {
		eb.Status.Conditions = nil
		meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded,
			Status: status, Reason: "R", ObservedGeneration: gen})
		return eb
	}
	cases := []struct {
		name     string
		backup   *etcdv1beta2.EtcdBackup
		wantDue  bool
		wantWait time.Duration
	}{
		{"never run", &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, true, 0},
		{"last attempt failed", withCondition(succeededBackup(3600, 0, now.Add(-time.Minute)), metav1.ConditionFalse, 1), true, 0},
		{"succeeded for an older generation", withCondition(succeededBackup(3600, 0, now.Add(-time.Minute)), metav1.ConditionTrue, 0), true, 0},
		{"one-shot succeeded: never again", succeededBackup(0, 0, now.Add(-365*24*time.Hour)), false, 0},
		{"periodic, within the interval", succeededBackup(3600, 0, now.Add(-20*time.Minute)), false, 40 * time.Minute},
		{"periodic, a second before", succeededBackup(3600, 0, now.Add(-time.Hour+time.Second)), false, time.Second},
		{"periodic, exactly at the interval", succeededBackup(3600, 0, now.Add(-time.Hour)), true, 0},
		// However many runs were missed, "due" is one run now.
		{"periodic, ten intervals late", succeededBackup(3600, 0, now.Add(-10*time.Hour)), true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wait, due := backupDue(c.backup, now)
			if due != c.wantDue || wait != c.wantWait {
				t.Errorf("backupDue = %v, %v; want %v, %v", wait, due, c.wantWait, c.wantDue)
			}
		})
	}
}

// A periodic backup runs one pod, records its result, and is next due an interval after
// the reconcile that saw the pod succeed; reconciles in between only wait.
func TestPeriodicBackupSchedule(t *testing.T) {
	h := newHarness(t, pvcBackup("sched", 3600), mainCluster("sched")...)

	// First run: a pod, and a requeue at its deadline (its status changes wake us sooner).
	if res := h.reconcile(); res.RequeueAfter != podDeadline {
		t.Errorf("after creating the pod: requeue in %v, want the pod's deadline %v", res.RequeueAfter, podDeadline)
	}
	pod := h.mustPod()
	if !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "--periodic --max-backups=3") {
		t.Errorf("periodic backup pod args %q lack --periodic --max-backups=3", pod.Spec.Containers[0].Args)
	}

	// A reconcile while it runs waits for the rest of the deadline.
	h.clock.Advance(30 * time.Second)
	if res := h.reconcile(); res.RequeueAfter != podDeadline-30*time.Second {
		t.Errorf("pod running 30s: requeue in %v, want %v", res.RequeueAfter, podDeadline-30*time.Second)
	}

	h.clock.Advance(30 * time.Second)
	h.succeedPod(storedResult())
	doneAt := h.clock.Now()
	if res := h.reconcile(); res.RequeueAfter != time.Hour {
		t.Errorf("after success: requeue in %v, want the interval", res.RequeueAfter)
	}
	if got := h.backup().Status.LastSuccessDate.Time; !got.Equal(doneAt) {
		t.Errorf("lastSuccessDate %v, want the reconcile that saw the pod succeed (%v)", got, doneAt)
	}
	if h.pod() != nil {
		t.Fatal("the finished pod was not deleted")
	}

	// Woken early (an event): wait for the rest of the interval, start nothing.
	h.clock.Advance(20 * time.Minute)
	if res := h.reconcile(); res.RequeueAfter != 40*time.Minute {
		t.Errorf("20m after success: requeue in %v, want 40m", res.RequeueAfter)
	}
	if h.pod() != nil {
		t.Error("a pod was started before the interval passed")
	}

	// At the interval: the next run.
	h.clock.Advance(40 * time.Minute)
	if res := h.reconcile(); res.RequeueAfter != podDeadline {
		t.Errorf("at the interval: requeue in %v, want the new pod's deadline", res.RequeueAfter)
	}
	if h.pod() == nil {
		t.Error("no pod started when the interval had passed")
	}
}

// After an operator outage of many intervals, current behaviour is: exactly one backup
// runs at once (missed runs are not caught up), and the schedule restarts from that run
// rather than keeping its old phase.
func TestPeriodicBackupAfterOutage(t *testing.T) {
	eb := pvcBackup("outage", 3600)
	eb.Status = succeededBackup(3600, 0, testStart).Status
	h := newHarness(t, eb, mainCluster("outage")...)

	h.clock.Advance(10*time.Hour + 17*time.Minute) // the operator was down
	h.reconcile()
	h.mustPod()
	h.clock.Advance(time.Minute)
	h.succeedPod(storedResult())
	caughtUpAt := h.clock.Now()
	if res := h.reconcile(); res.RequeueAfter != time.Hour {
		t.Errorf("after the catch-up backup: requeue in %v, want a full interval", res.RequeueAfter)
	}

	// No second run for the other nine missed intervals.
	if res := h.reconcile(); res.RequeueAfter != time.Hour {
		t.Errorf("right after the catch-up backup: requeue in %v, want a full interval", res.RequeueAfter)
	}
	if h.pod() != nil {
		t.Error("a second catch-up backup was started")
	}
	if got := h.backup().Status.LastSuccessDate.Time; !got.Equal(caughtUpAt) {
		t.Errorf("lastSuccessDate %v, want the catch-up run %v (the schedule restarts there)", got, caughtUpAt)
	}
}

// A one-shot backup that succeeded is not run again, however much later it is looked at;
// only a new generation (a spec change) runs it again.
func TestOneShotBackupNotRerunAfterSuccess(t *testing.T) {
	h := newHarness(t, pvcBackup("oneshot", 0), mainCluster("oneshot")...)
	h.reconcile()
	if args := strings.Join(h.mustPod().Spec.Containers[0].Args, " "); strings.Contains(args, "--periodic") {
		t.Errorf("one-shot backup pod runs with %q", args)
	}
	h.clock.Advance(time.Minute)
	h.succeedPod(storedResult())
	if res := h.reconcile(); res.RequeueAfter != 0 {
		t.Errorf("one-shot success: requeue in %v, want none", res.RequeueAfter)
	}

	for _, later := range []time.Duration{time.Second, time.Hour, 400 * 24 * time.Hour} {
		h.clock.Advance(later)
		if res := h.reconcile(); res.RequeueAfter != 0 {
			t.Errorf("%v later: requeue in %v, want none", later, res.RequeueAfter)
		}
		if h.pod() != nil {
			t.Fatalf("%v later: the one-shot backup was started again", later)
		}
	}

	eb := h.backup()
	eb.Spec.PVC.Path = "etcd-2.db"
	eb.Generation = 2 // the API server's part
	if err := h.c.Update(h.ctx, eb); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if p := h.pod(); p == nil || !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--key=etcd-2.db") {
		t.Errorf("after a spec change: pod %v, want a new backup to etcd-2.db", p)
	}
}

// The cache may not yet hold the status write of a backup that just succeeded; before
// deciding whether a backup is due the reconciler reads the EtcdBackup from the API, so a
// one-shot backup is not run twice.
func TestOneShotBackupNotRerunWhenCacheLags(t *testing.T) {
	stale := pvcBackup("lag", 0)
	h := newHarness(t, stale, mainCluster("lag")...)
	fresh := stale.DeepCopy()
	fresh.Status = succeededBackup(0, 0, testStart).Status
	h.r.APIReader = fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(fresh).Build()

	if res := h.reconcile(); res.RequeueAfter != 0 {
		t.Errorf("requeue in %v, want none", res.RequeueAfter)
	}
	if h.pod() != nil {
		t.Error("a second pod was started for a one-shot backup the API says succeeded")
	}

	// For a periodic backup, the API's lastSuccessDate sets the wait.
	fresh.Spec.BackupPolicy.BackupIntervalInSecond = 3600
	fresh.Status = succeededBackup(3600, 0, testStart.Add(-15*time.Minute)).Status
	h.r.APIReader = fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(fresh).Build()
	if err := h.c.Update(h.ctx, func() client.Object {
		eb := h.backup()
		eb.Spec.BackupPolicy.BackupIntervalInSecond = 3600
		return eb
	}()); err != nil {
		t.Fatal(err)
	}
	if res := h.reconcile(); res.RequeueAfter != 45*time.Minute || h.pod() != nil {
		t.Errorf("periodic, cache behind: requeue in %v (pod %v), want 45m and no pod", res.RequeueAfter, h.pod() != nil)
	}
}
