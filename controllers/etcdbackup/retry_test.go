package etcdbackup

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// The back-off doubles from 5s to 5m and stays there: there is no retry limit, a failing
// backup is tried every 5 minutes for as long as it fails.
func TestRetryBackoffSequence(t *testing.T) {
	r := &Reconciler{failures: map[client.ObjectKey]int{}}
	key := client.ObjectKey{Namespace: "ns", Name: "b"}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second,
		80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := r.nextRetry(key); got != w {
			t.Errorf("failure %d: retry in %v, want %v", i+1, got, w)
		}
	}
	for i := len(want); i < 200; i++ {
		if got := r.nextRetry(key); got != backupRetryMax {
			t.Fatalf("failure %d: retry in %v, want %v (no limit, no overflow)", i+1, got, backupRetryMax)
		}
	}
	if got := r.nextRetry(client.ObjectKey{Namespace: "ns", Name: "other"}); got != backupRetryMin {
		t.Errorf("another backup's first failure: retry in %v, want %v", got, backupRetryMin)
	}
}

// A failed attempt writes Succeeded=False with the failure's reason (also as the CoreOS
// status.reason) and a warning event, and is retried on the back-off. A reconcile woken
// earlier (an event) waits for the rest of it without trying; an unchanged failure
// writes no status and no second event.
func TestFailedAttemptBacksOff(t *testing.T) {
	h := newHarness(t, pvcBackup("retry", 0)) // no cluster "main": every attempt fails
	wantMsg := `spec.clusterRef.name: no EtcdCluster "main" in namespace retry`

	if res := h.reconcile(); res.RequeueAfter != 5*time.Second {
		t.Errorf("first failure: requeue in %v, want 5s", res.RequeueAfter)
	}
	eb := h.backup()
	cond := h.condition()
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonClusterNotFound ||
		cond.Message != wantMsg || cond.ObservedGeneration != 1 {
		t.Errorf("condition %+v, want Succeeded=False %s %q for generation 1", cond, etcdv1beta2.ReasonClusterNotFound, wantMsg)
	}
	if eb.Status.Succeeded || eb.Status.Reason != wantMsg {
		t.Errorf("status succeeded=%v reason=%q, want false and the message", eb.Status.Succeeded, eb.Status.Reason)
	}
	if ev := h.drainEvents(); len(ev) != 1 || ev[0] != "Warning "+etcdv1beta2.ReasonClusterNotFound+" "+wantMsg {
		t.Errorf("events %q, want one warning", ev)
	}

	h.clock.Advance(2 * time.Second)
	if res := h.reconcile(); res.RequeueAfter != 3*time.Second || h.failures() != 1 {
		t.Errorf("woken 2s into the back-off: requeue in %v after %d failures, want 3s and no attempt", res.RequeueAfter, h.failures())
	}

	// Each retry at its time fails again and doubles the wait.
	for _, next := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		h.clock.Advance(h.r.retryWait(h.key, 1, h.clock.Now()))
		if res := h.reconcile(); res.RequeueAfter != next {
			t.Errorf("retry at %v: requeue in %v, want %v", h.clock.Now().Sub(testStart), res.RequeueAfter, next)
		}
	}
	if ev := h.drainEvents(); len(ev) != 0 {
		t.Errorf("the same failure again recorded events %q", ev)
	}
}

// Retries of a periodic backup never wait longer than its interval.
func TestRetryNeverLaterThanInterval(t *testing.T) {
	h := newHarness(t, pvcBackup("cap", 30))
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second} {
		res := h.reconcile()
		if res.RequeueAfter != want {
			t.Errorf("failure %d: requeue in %v, want %v", i+1, res.RequeueAfter, want)
		}
		h.clock.Advance(res.RequeueAfter)
	}
}

// A failed periodic backup says so in the condition and status.succeeded, but keeps
// what the last success recorded.
func TestFailureKeepsLastSuccess(t *testing.T) {
	eb := pvcBackup("keep", 3600)
	last := testStart.Add(-2 * time.Hour)
	eb.Status = succeededBackup(3600, 0, last).Status
	eb.Status.EtcdRevision, eb.Status.EtcdVersion = 7, "3.5.17"
	h := newHarness(t, eb) // no cluster: the due run fails

	h.reconcile()
	got := h.backup().Status
	if got.Succeeded || !got.LastSuccessDate.Time.Equal(last) || got.EtcdRevision != 7 || got.EtcdVersion != "3.5.17" {
		t.Errorf("status after a failure: succeeded=%v lastSuccessDate=%v revision=%d version=%q; want false and the last success kept",
			got.Succeeded, got.LastSuccessDate, got.EtcdRevision, got.EtcdVersion)
	}
	if c := h.condition(); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("condition %+v, want Succeeded=False", c)
	}
}

// A changed spec is tried at once, even inside the back-off. The failure count is kept:
// the next failure backs off from where the old generation left off.
func TestChangedSpecRetriesAtOnce(t *testing.T) {
	h := newHarness(t, pvcBackup("respec", 0))
	for range 3 { // 5s, 10s, 20s
		h.clock.Advance(h.reconcile().RequeueAfter)
	}
	h.reconcile() // the third retry: back-off of 40s begins
	h.clock.Advance(time.Second)

	eb := h.backup()
	eb.Spec.PVC.Path = "other.db"
	eb.Generation = 2
	if err := h.c.Update(h.ctx, eb); err != nil {
		t.Fatal(err)
	}
	if res := h.reconcile(); res.RequeueAfter != 80*time.Second || h.failures() != 5 {
		t.Errorf("after a spec change: requeue in %v after %d failures, want an attempt at once (the 5th, 80s)", res.RequeueAfter, h.failures())
	}
	if c := h.condition(); c == nil || c.ObservedGeneration != 2 {
		t.Errorf("condition %+v, want it for generation 2", c)
	}
}

// A success forgets the failures: the next failure backs off from 5s again.
func TestSuccessResetsBackoff(t *testing.T) {
	h := newHarness(t, pvcBackup("reset", 3600))
	for range 3 {
		h.clock.Advance(h.reconcile().RequeueAfter)
	}
	for _, o := range mainCluster("reset") { // the cluster appears
		if err := h.c.Create(h.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	h.reconcile()
	h.clock.Advance(time.Minute)
	h.succeedPod(storedResult())
	h.reconcile()
	if n := h.failures(); n != 0 {
		t.Errorf("%d failures remembered after a success", n)
	}

	h.clock.Advance(time.Hour)
	h.reconcile()
	h.clock.Advance(time.Minute)
	h.finishPod(corev1.PodFailed, 1, "Error", string(backup.JobResult{Reason: etcdv1beta2.ReasonSnapshotFailed, Error: "no leader"}.Encode()))
	if res := h.reconcile(); res.RequeueAfter != backupRetryMin {
		t.Errorf("first failure after a success: requeue in %v, want %v", res.RequeueAfter, backupRetryMin)
	}
}

// A spec no retry can fix is reported once and not retried; a spec change wakes the
// backup.
func TestSpecProblemIsNotRetried(t *testing.T) {
	eb := pvcBackup("badspec", 3600)
	eb.Spec.PVC.Path = "dir/"
	h := newHarness(t, eb, mainCluster("badspec")...)
	for range 2 {
		if res := h.reconcile(); res.RequeueAfter != 0 {
			t.Errorf("invalid spec: requeue in %v, want none", res.RequeueAfter)
		}
		h.clock.Advance(time.Hour)
	}
	if c := h.condition(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonBackupInvalidSpec ||
		!strings.Contains(c.Message, `spec.pvc.path "dir/" names no file`) {
		t.Errorf("condition %+v, want Succeeded=False %s naming the path", c, etcdv1beta2.ReasonBackupInvalidSpec)
	}
	if n := h.failures(); n != 0 {
		t.Errorf("%d failures counted for an invalid spec, want none (no back-off)", n)
	}
	if ev := h.drainEvents(); len(ev) != 1 {
		t.Errorf("events %q, want one warning", ev)
	}
	if h.pod() != nil {
		t.Error("a pod was started for an invalid spec")
	}
}

// S3 backups share the back-off; this one fails before anything is dialled.
func TestS3FailureBacksOff(t *testing.T) {
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "s3retry", UID: "b-uid", Generation: 1},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3,
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: "main"},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "bucket/k", AWSSecret: "aws"}}},
	}
	h := newHarness(t, eb)
	if res := h.reconcile(); res.RequeueAfter != backupRetryMin {
		t.Errorf("requeue in %v, want %v", res.RequeueAfter, backupRetryMin)
	}
	if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonClusterNotFound {
		t.Errorf("condition %+v, want reason %s", c, etcdv1beta2.ReasonClusterNotFound)
	}
}

// A backup pod that failed is deleted and the backup retried on the back-off: the pod's
// deletion wakes the reconciler early, and that must not start the next pod sooner.
func TestFailedBackupPodIsRetriedAfterBackoff(t *testing.T) {
	h := newHarness(t, pvcBackup("podretry", 0), mainCluster("podretry")...)
	h.reconcile()
	h.clock.Advance(30 * time.Second)
	h.finishPod(corev1.PodFailed, 1, "Error", string(backup.JobResult{Reason: etcdv1beta2.ReasonSnapshotFailed, Error: "etcdserver: no leader"}.Encode()))

	if res := h.reconcile(); res.RequeueAfter != 5*time.Second {
		t.Errorf("failed pod: requeue in %v, want 5s", res.RequeueAfter)
	}
	if h.pod() != nil {
		t.Error("the failed pod was not deleted")
	}
	if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonSnapshotFailed || c.Message != "etcdserver: no leader" {
		t.Errorf("condition %+v, want SnapshotFailed with the pod's error", c)
	}

	h.clock.Advance(time.Second) // the pod's deletion
	if res := h.reconcile(); res.RequeueAfter != 4*time.Second || h.pod() != nil {
		t.Errorf("woken by the deletion: requeue in %v (pod %v), want 4s and no pod", res.RequeueAfter, h.pod() != nil)
	}
	h.clock.Advance(4 * time.Second)
	if res := h.reconcile(); res.RequeueAfter != podDeadline || h.pod() == nil {
		t.Errorf("after the back-off: requeue in %v (pod %v), want a new pod", res.RequeueAfter, h.pod() != nil)
	}
}

// A backup pod that does not finish within the timeout plus the start grace is deleted
// and the attempt counts as a Timeout failure.
func TestBackupPodTimeout(t *testing.T) {
	h := newHarness(t, pvcBackup("timeout", 0), mainCluster("timeout")...)
	h.reconcile()
	pod := h.mustPod()
	pod.Status.Phase = corev1.PodRunning
	if err := h.c.Status().Update(h.ctx, pod); err != nil {
		t.Fatal(err)
	}

	h.clock.Advance(podDeadline - time.Second)
	if res := h.reconcile(); res.RequeueAfter != time.Second || h.pod() == nil {
		t.Errorf("a second before the deadline: requeue in %v (pod %v), want 1s and the pod kept", res.RequeueAfter, h.pod() != nil)
	}
	h.clock.Advance(time.Second)
	if res := h.reconcile(); res.RequeueAfter != backupRetryMin {
		t.Errorf("at the deadline: requeue in %v, want %v", res.RequeueAfter, backupRetryMin)
	}
	if h.pod() != nil {
		t.Error("the overdue pod was not deleted")
	}
	want := "backup pod b-backup did not finish within 1m0s (backupPolicy.timeoutInSecond plus 2m0s to start; phase Running)"
	if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonTimeout || c.Message != want {
		t.Errorf("condition %+v, want %s %q", c, etcdv1beta2.ReasonTimeout, want)
	}
}

// A backup pod the API refuses is a failed attempt (StorageError); one that already
// exists (another reconcile made it) is not.
func TestBackupPodCreateFailure(t *testing.T) {
	h := newHarness(t, pvcBackup("create", 0), mainCluster("create")...)
	h.createErr = errors.New("admission webhook denied the pod")
	if res := h.reconcile(); res.RequeueAfter != backupRetryMin {
		t.Errorf("create refused: requeue in %v, want %v", res.RequeueAfter, backupRetryMin)
	}
	if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonStorageError || c.Message != "create backup pod: admission webhook denied the pod" {
		t.Errorf("condition %+v, want StorageError with the API's answer", c)
	}

	h.clock.Advance(backupRetryMin)
	h.createErr = apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "b-backup")
	if res := h.reconcile(); res.RequeueAfter != podDeadline || h.failures() != 1 {
		t.Errorf("pod already exists: requeue in %v after %d failures, want the pod's deadline and no new failure", res.RequeueAfter, h.failures())
	}
}

// Deleting the EtcdBackup forgets its back-off.
func TestDeletedBackupForgetsBackoff(t *testing.T) {
	h := newHarness(t, pvcBackup("forget", 0))
	h.reconcile()
	if err := h.c.Delete(h.ctx, h.backup()); err != nil {
		t.Fatal(err)
	}
	if res := h.reconcile(); res.RequeueAfter != 0 {
		t.Errorf("deleted backup: requeue in %v", res.RequeueAfter)
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if len(h.r.failures) != 0 || len(h.r.retryAt) != 0 {
		t.Errorf("back-off state kept for a deleted backup: %v %v", h.r.failures, h.r.retryAt)
	}
}
