package etcdbackup

import (
	"context"
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

// podResult reads only the backup container's terminated state: its termination message
// as the backup program's JSON result, or (FallbackToLogsOnError) the log's tail.
func TestPodResult(t *testing.T) {
	terminated := func(name string, code int32, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: msg}}}
	}
	cases := []struct {
		name     string
		statuses []corev1.ContainerStatus
		want     backup.JobResult
		wantExit string
		wantErr  bool
	}{
		{"no container status", nil, backup.JobResult{}, "container status unknown", true},
		{"backup container not terminated", []corev1.ContainerStatus{{Name: BackupPodContainer,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}, backup.JobResult{}, "container status unknown", true},
		{"another container's message", []corev1.ContainerStatus{terminated("sidecar", 0, "Completed", `{"revision":9}`)},
			backup.JobResult{}, "container status unknown", true},
		{"killed without a message", []corev1.ContainerStatus{terminated(BackupPodContainer, 137, "OOMKilled", "")},
			backup.JobResult{}, "exit code 137, OOMKilled", true},
		{"result", []corev1.ContainerStatus{terminated(BackupPodContainer, 0, "Completed", string(storedResult().Encode()))},
			storedResult(), "exit code 0, Completed", false},
		{"failure result", []corev1.ContainerStatus{terminated(BackupPodContainer, 1, "", `{"reason":"Timeout","error":"too slow"}`)},
			backup.JobResult{Reason: "Timeout", Error: "too slow"}, "exit code 1", false},
		{"log tail instead of JSON", []corev1.ContainerStatus{terminated(BackupPodContainer, 2, "Error", "panic: boom")},
			backup.JobResult{Error: "panic: boom"}, "exit code 2, Error", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, exit, err := podResult(&corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: c.statuses}})
			if res != c.want || exit != c.wantExit || (err != nil) != c.wantErr {
				t.Errorf("podResult = %+v, %q, %v; want %+v, %q, error %v", res, exit, err, c.want, c.wantExit, c.wantErr)
			}
		})
	}
}

func TestPodRunTime(t *testing.T) {
	start := metav1.NewTime(testStart)
	pod := func(name string, started metav1.Time) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: started,
				FinishedAt: metav1.NewTime(testStart.Add(42 * time.Second))}}}}}}
	}
	if got := podRunTime(pod(BackupPodContainer, start)); got != 42*time.Second {
		t.Errorf("run time %v, want 42s", got)
	}
	if got := podRunTime(pod(BackupPodContainer, metav1.Time{})); got != 0 {
		t.Errorf("unknown start: run time %v, want 0", got)
	}
	if got := podRunTime(pod("other", start)); got != 0 {
		t.Errorf("another container: run time %v, want 0", got)
	}
}

// A succeeded pod's result goes into status: revision, version, the success time and a
// condition naming where the backup is (in the claim, not the pod's mount), with what
// retention did. The pod is deleted and an event recorded.
func TestSucceededPodResultIntoStatus(t *testing.T) {
	h := newHarness(t, pvcBackup("podok", 3600), mainCluster("podok")...)
	h.reconcile()
	h.clock.Advance(40 * time.Second)
	res := storedResult()
	res.Pruned, res.RetentionError = 2, "remove etcd.db_v1: permission denied"
	h.succeedPod(res)
	h.reconcile()

	eb := h.backup()
	if !eb.Status.Succeeded || eb.Status.Reason != "" || eb.Status.EtcdRevision != 42 || eb.Status.EtcdVersion != "3.5.17" ||
		!eb.Status.LastSuccessDate.Time.Equal(h.clock.Now()) {
		t.Errorf("status %+v, want succeeded with revision 42, version 3.5.17, lastSuccessDate now", eb.Status)
	}
	want := "snapshot of revision 42 from http://10.0.0.1:2379 stored as pvc://claim/etcd.db_v42_20261203-100000 (1234 bytes, sha256 abc123)" +
		"; retention removed 2 older backups; retention failed: remove etcd.db_v1: permission denied"
	if c := h.condition(); c == nil || c.Status != metav1.ConditionTrue || c.Reason != etcdv1beta2.ReasonBackupSucceeded ||
		c.Message != want || c.ObservedGeneration != 1 {
		t.Errorf("condition %+v, want Succeeded=True %q", c, want)
	}
	if ev := h.drainEvents(); len(ev) != 1 || ev[0] != "Normal "+etcdv1beta2.ReasonBackupSucceeded+" "+want {
		t.Errorf("events %q, want one normal event with the message", ev)
	}
	if h.pod() != nil {
		t.Error("the finished pod was not deleted")
	}
}

// A pod that succeeded without a readable result still counts as a success; status says
// so and keeps the revision it knew.
func TestSucceededPodWithoutResult(t *testing.T) {
	eb := pvcBackup("noresult", 0)
	eb.Status.EtcdRevision, eb.Status.EtcdVersion = 7, "3.5.16"
	h := newHarness(t, eb, mainCluster("noresult")...)
	h.reconcile()
	h.finishPod(corev1.PodSucceeded, 0, "Completed", "")
	h.reconcile()
	got := h.backup().Status
	if !got.Succeeded || got.EtcdRevision != 7 || got.EtcdVersion != "3.5.16" {
		t.Errorf("status %+v, want succeeded with revision 7 / 3.5.16 kept", got)
	}
	want := "backup pod succeeded but reported no result (no termination message)"
	if c := h.condition(); c == nil || c.Status != metav1.ConditionTrue || c.Message != want {
		t.Errorf("condition %+v, want Succeeded=True %q", c, want)
	}
}

// A failed pod's reason and message come from its result when it reported one, else
// from how its container ended.
func TestFailedPodIntoStatus(t *testing.T) {
	cases := []struct {
		name                 string
		exitCode             int32
		exitReason, message  string
		wantReason, wantText string
	}{
		{"reported failure", 1, "Error", string(backup.JobResult{Reason: etcdv1beta2.ReasonStorageError, Error: "write /backup/etcd.db: no space left on device"}.Encode()),
			etcdv1beta2.ReasonStorageError, "write /backup/etcd.db: no space left on device"},
		{"killed without a result", 137, "OOMKilled", "",
			etcdv1beta2.ReasonBackupPodFailed, "backup pod b-backup failed (exit code 137, OOMKilled)"},
		{"result without a reason", 1, "Error", `{"error":"boom"}`,
			etcdv1beta2.ReasonBackupPodFailed, "backup pod b-backup failed (exit code 1, Error): boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, pvcBackup("podfail", 0), mainCluster("podfail")...)
			h.reconcile()
			h.finishPod(corev1.PodFailed, c.exitCode, c.exitReason, c.message)
			if res := h.reconcile(); res.RequeueAfter != backupRetryMin {
				t.Errorf("requeue in %v, want the first back-off %v", res.RequeueAfter, backupRetryMin)
			}
			eb := h.backup()
			if cond := h.condition(); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != c.wantReason || cond.Message != c.wantText {
				t.Errorf("condition %+v, want Succeeded=False %s %q", cond, c.wantReason, c.wantText)
			}
			if eb.Status.Succeeded || eb.Status.Reason != c.wantText {
				t.Errorf("status succeeded=%v reason=%q", eb.Status.Succeeded, eb.Status.Reason)
			}
			if ev := h.drainEvents(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+c.wantReason+" ") {
				t.Errorf("events %q, want one warning %s", ev, c.wantReason)
			}
			if h.pod() != nil {
				t.Error("the failed pod was not deleted")
			}
		})
	}
}

// The backup program writes no result when it dies (a panic): the kubelet then puts the
// log's tail in the termination message, the pod spec says so that "the log's tail
// explains", and podResult keeps it as the result's error.
func TestFailedPodLogTailIntoStatus(t *testing.T) {
	h := newHarness(t, pvcBackup("logtail", 0), mainCluster("logtail")...)
	h.reconcile()
	h.finishPod(corev1.PodFailed, 2, "Error", "panic: open /backup: read-only file system")
	h.reconcile()
	if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonBackupPodFailed || !strings.Contains(c.Message, "read-only file system") {
		t.Errorf("condition %+v, want %s with the log's tail", c, etcdv1beta2.ReasonBackupPodFailed)
	}
}

// For external endpoints (the operator flag), a pod's dial failures read alike in status,
// as for in-process backups; other failures are shown as reported.
func TestFailedExternalPodHidesDialDetail(t *testing.T) {
	generic := "cannot reach etcd at the given endpoints (spec.etcdEndpoints) or take a snapshot there"
	cases := []struct {
		reason, err          string
		wantReason, wantText string
	}{
		{etcdv1beta2.ReasonSnapshotFailed, "dial tcp 10.9.9.9:22: connect: connection refused", etcdv1beta2.ReasonSnapshotFailed, generic},
		{etcdv1beta2.ReasonTimeout, "backup did not finish within 1m0s: context deadline exceeded", etcdv1beta2.ReasonSnapshotFailed, generic},
		{etcdv1beta2.ReasonTLSError, "x509: certificate signed by unknown authority", etcdv1beta2.ReasonSnapshotFailed, generic},
		{etcdv1beta2.ReasonStorageError, "write /backup/x: no space left on device", etcdv1beta2.ReasonStorageError, "write /backup/x: no space left on device"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			eb := pvcBackup("external", 0)
			eb.Spec.ClusterRef = nil
			eb.Spec.EtcdEndpoints = []string{"https://etcd.example.com:2379"}
			h := newHarness(t, eb)
			h.r.AllowExternalEndpoints = true
			h.reconcile()
			if !podDialedExternal(h.mustPod()) {
				t.Fatalf("external backup pod lacks annotation %s", annotationBackupExternal)
			}
			h.finishPod(corev1.PodFailed, 1, "Error", string(backup.JobResult{Reason: c.reason, Error: c.err}.Encode()))
			h.reconcile()
			if cond := h.condition(); cond == nil || cond.Reason != c.wantReason || cond.Message != c.wantText {
				t.Errorf("condition %+v, want %s %q", cond, c.wantReason, c.wantText)
			}
		})
	}
}

// ownedPod is a backup pod the backup controls, in the given phase.
func ownedPod(eb *etcdv1beta2.EtcdBackup, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: backupPodName(eb), Namespace: eb.Namespace, UID: "pod-uid",
		CreationTimestamp: metav1.NewTime(testStart)}, Status: corev1.PodStatus{Phase: phase}}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(eb, etcdv1beta2.GroupVersion.WithKind("EtcdBackup"))}
	return p
}

// A finished pod that is already being deleted is the previous run going away: the
// reconciler waits a second for it to go, reads nothing from it and starts nothing.
func TestPodBeingDeletedIsWaitedFor(t *testing.T) {
	eb := pvcBackup("deleting", 0)
	pod := ownedPod(eb, corev1.PodSucceeded)
	pod.DeletionTimestamp = &metav1.Time{Time: testStart}
	pod.Finalizers = []string{"test/hold"}
	h := newHarness(t, eb, append(mainCluster("deleting"), pod)...)
	if res := h.reconcile(); res.RequeueAfter != time.Second {
		t.Errorf("requeue in %v, want 1s", res.RequeueAfter)
	}
	if c := h.condition(); c != nil {
		t.Errorf("condition %+v written from a pod being deleted", c)
	}
}

// A backup pod deleted by someone else while it ran is not a failed attempt: the next
// reconcile starts a new pod at once.
func TestPodDeletedWhileRunning(t *testing.T) {
	h := newHarness(t, pvcBackup("deleted", 0), mainCluster("deleted")...)
	h.reconcile()
	if err := h.c.Delete(h.ctx, h.mustPod()); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(10 * time.Second)
	if res := h.reconcile(); res.RequeueAfter != podDeadline || h.pod() == nil {
		t.Errorf("after the pod was deleted: requeue in %v (pod %v), want a new pod", res.RequeueAfter, h.pod() != nil)
	}
	if c := h.condition(); c != nil || h.failures() != 0 {
		t.Errorf("condition %+v, %d failures after the pod was deleted; want none", c, h.failures())
	}
}

// The finished pod's result counts even if the pod is gone (or replaced) by the time the
// reconciler deletes it.
func TestPodGoneBeforeItsDeletion(t *testing.T) {
	for name, deleteErr := range map[string]error{
		"gone":     apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "b-backup"),
		"replaced": apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "b-backup", nil),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, pvcBackup("gone", 0), mainCluster("gone")...)
			h.reconcile()
			h.succeedPod(storedResult())
			h.onDelete = func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return deleteErr }
			h.reconcile()
			if c := h.condition(); c == nil || c.Status != metav1.ConditionTrue || h.backup().Status.EtcdRevision != 42 {
				t.Errorf("condition %+v, want the pod's result recorded", c)
			}
		})
	}
}

// A pod of the backup pod's name that the backup does not control is never read, trusted
// or deleted, even if it claims a success: status says the name is taken.
func TestForeignPodNotTrusted(t *testing.T) {
	eb := pvcBackup("foreign", 3600)
	for name, owners := range map[string][]metav1.OwnerReference{
		"no owner": nil,
		"an earlier backup of the same name": {*metav1.NewControllerRef(&etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{
			Name: eb.Name, UID: "earlier-uid"}}, etcdv1beta2.GroupVersion.WithKind("EtcdBackup"))},
	} {
		t.Run(name, func(t *testing.T) {
			pod := ownedPod(eb, corev1.PodSucceeded)
			pod.OwnerReferences = owners
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: BackupPodContainer, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Message: string(storedResult().Encode())}}}}
			h := newHarness(t, eb.DeepCopy(), append(mainCluster("foreign"), pod)...)
			h.reconcile()

			got := h.backup().Status
			want := "pod foreign/b-backup exists and does not belong to this backup; the backup resumes once it is gone"
			if c := h.condition(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonBackupInvalidSpec || c.Message != want {
				t.Errorf("condition %+v, want Succeeded=False %s %q", c, etcdv1beta2.ReasonBackupInvalidSpec, want)
			}
			if got.Succeeded || got.EtcdRevision != 0 || !got.LastSuccessDate.IsZero() {
				t.Errorf("status %+v took something from a foreign pod", got)
			}
			if h.pod() == nil {
				t.Error("the foreign pod was deleted")
			}
		})
	}
}

// Once the foreign pod is gone, the backup should resume. Nothing wakes it: the pod's
// deletion does not map to an EtcdBackup it does not name as owner, status writes do not
// pass the watch's predicates, and the reconcile asked for no requeue.
func TestForeignPodDoesNotStopBackupsForGood(t *testing.T) {
	eb := pvcBackup("squat", 3600)
	pod := ownedPod(eb, corev1.PodRunning)
	pod.OwnerReferences = nil
	h := newHarness(t, eb, append(mainCluster("squat"), pod)...)
	if res := h.reconcile(); res.RequeueAfter == 0 {
		t.Error("a foreign pod holding the name: no requeue, so the backup is not tried again once it is gone")
	}
}

// A compression value the backup cannot honour is refused on the PVC path as on the S3
// path, naming the annotation, before any pod is made; it was silently dropped (the
// pod stored the snapshot uncompressed).
func TestUnknownCompressionRefusedOnThePVCPath(t *testing.T) {
	eb := pvcBackup("zstd", 0)
	eb.Annotations = map[string]string{etcdv1beta2.BackupCompressionAnnotation: "zstd"}
	h := newHarness(t, eb, mainCluster("zstd")...)
	h.reconcile()
	if p := h.pod(); p != nil {
		t.Fatalf("backup pod %s created with args %q; want the spec refused", p.Name, p.Spec.Containers[0].Args)
	}
	c, got := h.condition(), h.backup().Status
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonBackupInvalidSpec ||
		!strings.Contains(c.Message, etcdv1beta2.BackupCompressionAnnotation) || got.Succeeded || got.Reason != c.Message {
		t.Errorf("condition %+v, status %+v; want InvalidSpec naming the annotation", c, got)
	}
}
