package etcdbackup

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// The reconciler's tests below run it against a fake API (no etcd, no storage, no
// envtest): PVC backups need nothing but pods, whose outcome the tests write themselves,
// and the S3 path is driven only into failures found before anything is dialled.

// testStart is where the fake clock starts: whole seconds, because status times lose
// anything finer on their way through the API.
var testStart = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// harness is one EtcdBackup under a Reconciler with a fake client and a fake clock.
type harness struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client
	r      *Reconciler
	clock  *fixture.Clock
	events *record.FakeRecorder
	key    client.ObjectKey

	// createErr, when set, is what creating an object returns.
	createErr error
	// onDelete, when set, replaces deleting an object (the reconciler deletes only pods).
	onDelete func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error
}

// newHarness serves eb and objs. Objects the reconciler creates get the clock's time as
// their creationTimestamp, as the API server would give them.
func newHarness(t *testing.T, eb *etcdv1beta2.EtcdBackup, objs ...client.Object) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), clock: fixture.NewClock(testStart),
		events: record.NewFakeRecorder(100), key: client.ObjectKeyFromObject(eb)}
	// Attempts are counted in the process-wide metrics that other tests read.
	t.Cleanup(func() { forgetBackupMetrics(eb.Namespace, eb.Name) })
	c := fake.NewClientBuilder().WithScheme(fixture.Scheme()).
		WithObjects(append([]client.Object{eb}, objs...)...).
		WithStatusSubresource(&etcdv1beta2.EtcdBackup{}, &corev1.Pod{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if h.createErr != nil {
					return h.createErr
				}
				obj.SetCreationTimestamp(metav1.NewTime(h.clock.Now()))
				return c.Create(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if h.onDelete != nil {
					return h.onDelete(ctx, c, obj, opts...)
				}
				return c.Delete(ctx, obj, opts...)
			},
		}).Build()
	h.c = c
	h.r = &Reconciler{Client: c, APIReader: c, Recorder: h.events, Now: h.clock.Now, PinKey: []byte("0123456789abcdef0123456789abcdef"),
		failures: map[client.ObjectKey]int{}, retryAt: map[client.ObjectKey]retryState{}, S3Access: testS3Access}
	return h
}

// reconcile runs one reconcile of the backup by each of its two controllers, as the
// manager does when the backup controller's status write wakes the verification
// controller: the backup one, then the verification one. It fails the test on an error
// and returns the sooner of the two requeues.
func (h *harness) reconcile() ctrl.Result {
	h.t.Helper()
	req := ctrl.Request{NamespacedName: h.key}
	res, err := h.r.Reconcile(h.ctx, req)
	if err != nil {
		h.t.Fatalf("reconcile at %v: %v", h.clock.Now().Sub(testStart), err)
	}
	vres, err := h.verifier().Reconcile(h.ctx, req)
	if err != nil {
		h.t.Fatalf("verification reconcile at %v: %v", h.clock.Now().Sub(testStart), err)
	}
	return soonest(res, vres)
}

// verifier is the verification controller's reconciler over the harness's.
func (h *harness) verifier() *VerificationReconciler { return &VerificationReconciler{Reconciler: h.r} }

// soonest is the earlier of two requeues (0: none).
func soonest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

// backup is the EtcdBackup as stored.
func (h *harness) backup() *etcdv1beta2.EtcdBackup {
	h.t.Helper()
	var eb etcdv1beta2.EtcdBackup
	if err := h.c.Get(h.ctx, h.key, &eb); err != nil {
		h.t.Fatal(err)
	}
	return &eb
}

// condition is the backup's Succeeded condition, or nil.
func (h *harness) condition() *metav1.Condition {
	h.t.Helper()
	return meta.FindStatusCondition(h.backup().Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
}

// pod is the backup pod, or nil if there is none.
func (h *harness) pod() *corev1.Pod {
	h.t.Helper()
	var p corev1.Pod
	err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.key.Namespace, Name: backupPodName(h.backup())}, &p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return &p
}

// mustPod is the backup pod, which must exist.
func (h *harness) mustPod() *corev1.Pod {
	h.t.Helper()
	p := h.pod()
	if p == nil {
		h.t.Fatalf("no backup pod at %v", h.clock.Now().Sub(testStart))
	}
	return p
}

// finishPod ends the backup pod now, as the kubelet reports it: the phase and the backup
// container's exit code, reason and termination message.
func (h *harness) finishPod(phase corev1.PodPhase, exitCode int32, reason, message string) {
	h.t.Helper()
	p := h.mustPod()
	p.Status.Phase = phase
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: BackupPodContainer, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, Message: message,
			StartedAt: p.CreationTimestamp, FinishedAt: metav1.NewTime(h.clock.Now())},
	}}}
	if err := h.c.Status().Update(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
}

// succeedPod ends the backup pod with the result the backup program reports on success.
func (h *harness) succeedPod(res backup.JobResult) {
	h.t.Helper()
	h.finishPod(corev1.PodSucceeded, 0, "Completed", string(res.Encode()))
}

// drainEvents returns the events recorded since the last call, as "Type Reason Message".
func (h *harness) drainEvents() []string { return fixture.DrainEvents(h.events) }

// failures is how many failed attempts the reconciler counts for the backup's back-off.
func (h *harness) failures() int {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	return h.r.failures[h.key]
}

// pvcBackup is a backup of cluster "main" of namespace ns into a claim, every interval
// seconds (0: one-shot), with the default timeout (so the pod's deadline is 3 minutes).
func pvcBackup(ns string, interval int64) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns, UID: "b-uid", Generation: 1},
		Spec: etcdv1beta2.EtcdBackupSpec{
			StorageType: etcdv1beta2.BackupStorageTypePVC,
			ClusterRef:  &etcdv1beta2.EtcdClusterRef{Name: "main"},
			BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{
				ClaimName: "claim", Path: "etcd.db"}},
			BackupPolicy: &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: interval, MaxBackups: 3},
		},
	}
}

// mainCluster is cluster "main" of namespace ns with one running member at 10.0.0.1.
func mainCluster(ns string) []client.Object {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: ns, UID: "main-uid"}}
	return []client.Object{c, memberPodOf(c, "main-0001", "10.0.0.1")}
}

// podDeadline is how long a backup pod of pvcBackup may run: the default timeout plus
// the start grace.
const podDeadline = defaultBackupTimeout + backupPodStartGrace

// storedResult is what the backup program reports after storing revision 42 in the claim.
func storedResult() backup.JobResult {
	return backup.JobResult{Key: "etcd.db", Location: "file://" + backupMountPath + "/etcd.db_v42_20261203-100000",
		Size: 1234, SHA256: "abc123", Endpoint: "http://10.0.0.1:2379", Revision: 42, Version: "3.5.17"}
}

// memberPodOf is a running member pod the cluster controls, with the given IP.
func memberPodOf(c *etcdv1beta2.EtcdCluster, name, ip string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: render.MemberLabels(c.Name, name)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(c, etcdv1beta2.GroupVersion.WithKind("EtcdCluster"))}
	return p
}
