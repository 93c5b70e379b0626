package etcdbackup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// verifyPod is the verification pod, or nil.
func (h *harness) verifyPod() *corev1.Pod {
	h.t.Helper()
	var p corev1.Pod
	err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.key.Namespace, Name: render.VerifyPodName(h.key.Name)}, &p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return &p
}

// endVerifyStep ends a step of the verification pod with its result as termination message.
func (h *harness) endVerifyStep(container string, exitCode int32, message string) {
	h.t.Helper()
	p := h.verifyPod()
	if p == nil {
		h.t.Fatal("no verification pod")
	}
	st := corev1.ContainerStatus{Name: container, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Message: message}}}
	if container == render.VerifyRestoreContainer {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{st}
	} else {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
	}
	if err := h.c.Status().Update(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) verified() *metav1.Condition {
	return meta.FindStatusCondition(h.backup().Status.Conditions, etcdv1beta2.BackupConditionVerified)
}

// verifiedPVCBackup is a one-shot PVC backup verified after each backup, whose backup pod
// has stored revision 42 of etcd 3.5.17.
func verifiedPVCBackup(t *testing.T, ns string) *harness {
	t.Helper()
	eb := pvcBackup(ns, 0)
	eb.Annotations = map[string]string{etcdv1beta2.BackupVerifyAfterEachAnnotation: "true"}
	h := newHarness(t, eb, mainCluster(ns)...)
	h.reconcile()
	h.clock.Advance(10 * time.Second)
	h.succeedPod(storedResult())
	h.reconcile()
	h.drainEvents()
	return h
}

// After each backup a verification pod restores it; its check's result becomes
// Verified=True, lastVerified*, an event; the pod is deleted and no second one starts.
func TestVerificationAfterEachBackup(t *testing.T) {
	h := verifiedPVCBackup(t, "verify-ok")
	p := h.verifyPod()
	if p == nil {
		t.Fatal("no verification pod after the backup")
	}
	if !metav1.IsControlledBy(p, h.backup()) || p.Spec.Containers[0].Image != "quay.io/coreos/etcd:v3.5.17" {
		t.Errorf("pod owners %v, etcd image %s", p.OwnerReferences, p.Spec.Containers[0].Image)
	}
	if v := p.Spec.Volumes[1].PersistentVolumeClaim; v == nil || v.ClaimName != "claim" || !v.ReadOnly {
		t.Errorf("claim volume %+v", p.Spec.Volumes[1])
	}
	if args := p.Spec.InitContainers[0].Args; !slices.Contains(args, "--key=etcd.db") || slices.Contains(args, "--latest") {
		t.Errorf("one-shot backup: restore args %v", args)
	}
	h.reconcile() // still running: nothing changes
	if h.verified() != nil {
		t.Fatalf("verified before the pod finished: %+v", h.verified())
	}

	h.clock.Advance(20 * time.Second)
	h.endVerifyStep(render.VerifyCheckContainer, 0, string(restore.CheckResult{Key: "etcd.db", Revision: 42, ServedRevision: 42, KeyCount: 9, KeyCountChecked: true}.Encode()))
	h.reconcile()
	st := h.backup().Status
	if st.LastVerifiedTime == nil || !st.LastVerifiedTime.Time.Equal(h.clock.Now()) || st.LastVerifiedKey != "etcd.db" || st.LastVerifiedRevision != 42 {
		t.Errorf("status %+v", st)
	}
	want := "pvc://claim/etcd.db restored into a one-member etcd, which served revision 42 (recorded 42) with 9 keys at that revision, as the cluster held when the backup was taken"
	if c := h.verified(); c == nil || c.Status != metav1.ConditionTrue || c.Reason != etcdv1beta2.ReasonBackupVerified || c.Message != want {
		t.Errorf("condition %+v, want %q", c, want)
	}
	if ev := h.drainEvents(); len(ev) != 1 || ev[0] != "Normal "+etcdv1beta2.ReasonBackupVerified+" "+want {
		t.Errorf("events %q", ev)
	}
	if h.verifyPod() != nil {
		t.Error("the verification pod was not deleted")
	}
	h.clock.Advance(time.Minute)
	h.reconcile()
	if h.verifyPod() != nil {
		t.Error("a second verification of the same backup")
	}
}

// A corrupted backup fails in the restore step: Verified=False with its reason and the
// object named; an earlier success stays in lastVerified*.
func TestVerificationFailureKeepsLastVerified(t *testing.T) {
	h := verifiedPVCBackup(t, "verify-bad")
	before := metav1.NewTime(testStart.Add(-time.Hour))
	eb := h.backup()
	eb.Status.LastVerifiedTime, eb.Status.LastVerifiedKey, eb.Status.LastVerifiedRevision = &before, "old.db", 7
	if err := h.c.Status().Update(h.ctx, eb); err != nil {
		t.Fatal(err)
	}
	h.endVerifyStep(render.VerifyRestoreContainer, 1, string(restore.CheckResult{Key: "etcd.db", Reason: etcdv1beta2.ReasonChecksumMismatch,
		Error: "etcd.db: checksum mismatch: the stored backup is corrupted"}.Encode()))
	h.reconcile()
	c := h.verified()
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonChecksumMismatch ||
		!strings.Contains(c.Message, "verification of pvc://claim/etcd.db failed") || !strings.Contains(c.Message, "corrupted") {
		t.Errorf("condition %+v", c)
	}
	st := h.backup().Status
	if st.LastVerifiedKey != "old.db" || st.LastVerifiedRevision != 7 || !st.LastVerifiedTime.Equal(&before) {
		t.Errorf("lastVerified* changed on a failure: %+v", st)
	}
	if ev := h.drainEvents(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+etcdv1beta2.ReasonChecksumMismatch) {
		t.Errorf("events %q", ev)
	}
	if h.verifyPod() != nil {
		t.Error("the failed verification pod was not deleted")
	}
}

// A pod that never finishes is given up after its deadline, saying what it was stuck on.
func TestVerificationTimeout(t *testing.T) {
	h := verifiedPVCBackup(t, "verify-stuck")
	p := h.verifyPod()
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.VerifyEtcdContainer, State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
	if err := h.c.Status().Update(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	res := h.reconcile()
	if h.verified() != nil || res.RequeueAfter <= 0 {
		t.Fatalf("gave up early: %+v, requeue %v", h.verified(), res.RequeueAfter)
	}
	h.clock.Advance(res.RequeueAfter)
	h.reconcile()
	c := h.verified()
	if c == nil || c.Reason != etcdv1beta2.ReasonVerificationFailed || !strings.Contains(c.Message, "did not finish in time") ||
		!strings.Contains(c.Message, "container etcd waiting: ErrImagePull") {
		t.Errorf("condition %+v", c)
	}
	if h.verifyPod() != nil {
		t.Error("the stuck pod was not deleted")
	}
}

// A verification schedule runs at its slots, not at creation, and a pod of that name the
// backup does not control is never touched.
func TestVerificationScheduleAndForeignPod(t *testing.T) {
	eb := pvcBackup("verify-cron", 0)
	eb.CreationTimestamp = metav1.NewTime(testStart)
	eb.Annotations = map[string]string{etcdv1beta2.BackupVerifyScheduleAnnotation: "@hourly"}
	eb.Status = etcdv1beta2.EtcdBackupStatus{Succeeded: true, EtcdVersion: "3.6.16", EtcdRevision: 5, LastSuccessDate: metav1.NewTime(testStart),
		Conditions: []metav1.Condition{{Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded,
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testStart)}}}
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: render.VerifyPodName("b"), Namespace: "verify-cron"}}
	h := newHarness(t, eb, append(mainCluster("verify-cron"), foreign)...)
	res := h.reconcile()
	if c := h.verified(); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "does not belong to this backup") {
		t.Errorf("foreign pod: condition %+v", c)
	}
	if p := h.verifyPod(); p == nil || len(p.OwnerReferences) != 0 {
		t.Fatal("the foreign pod was touched")
	}
	if err := h.c.Delete(h.ctx, foreign); err != nil {
		t.Fatal(err)
	}
	res = h.reconcile()
	if h.verifyPod() != nil {
		t.Fatal("verified at creation, before the first slot")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Hour {
		t.Errorf("requeue %v, want the next slot within the hour", res.RequeueAfter)
	}
	h.clock.Advance(time.Hour)
	h.reconcile()
	p := h.verifyPod()
	if p == nil || p.Spec.Containers[0].Image != "quay.io/coreos/etcd:v3.6.16" {
		t.Fatalf("no verification at the slot: %+v", p)
	}
}

// Settings the operator cannot follow are reported on the Verified condition, naming the field.
func TestVerificationInvalidSpec(t *testing.T) {
	for name, ann := range map[string]map[string]string{
		"after-each": {etcdv1beta2.BackupVerifyAfterEachAnnotation: "yes"},
		"schedule":   {etcdv1beta2.BackupVerifyScheduleAnnotation: "every tuesday"},
		"time zone":  {etcdv1beta2.BackupVerifyTimeZoneAnnotation: "Europe/Berlin"},
	} {
		eb := pvcBackup("verify-invalid", 0)
		eb.Annotations = ann
		h := newHarness(t, eb, mainCluster("verify-invalid")...)
		h.reconcile()
		c := h.verified()
		if c == nil || c.Reason != etcdv1beta2.ReasonVerificationInvalidSpec || !strings.Contains(c.Message, "spec.verification.") {
			t.Errorf("%s: condition %+v", name, c)
		}
		if h.verifyPod() != nil {
			t.Errorf("%s: a verification pod", name)
		}
	}
}

// TestVerifyOutcome reads the steps' results, and what the kubelet says when a step died
// before writing one.
func TestVerifyOutcome(t *testing.T) {
	term := func(name string, code int32, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}
	}
	didNotStart := string(restore.CheckResult{Reason: etcdv1beta2.ReasonEtcdDidNotStart, Error: "did not serve"}.Encode())
	for name, tc := range map[string]struct {
		init, containers []corev1.ContainerStatus
		pastDeadline     bool
		done             bool
		reason, contains string
	}{
		"running":                   {init: []corev1.ContainerStatus{term(render.VerifyRestoreContainer, 0, "{}")}},
		"restore log tail":          {init: []corev1.ContainerStatus{term(render.VerifyRestoreContainer, 2, "panic: boom\n")}, done: true, reason: etcdv1beta2.ReasonVerificationFailed, contains: "panic: boom"},
		"etcd did not start":        {containers: []corev1.ContainerStatus{term(render.VerifyEtcdContainer, 1, "fatal: member has already been bootstrapped"), term(render.VerifyCheckContainer, 1, didNotStart)}, done: true, reason: etcdv1beta2.ReasonEtcdDidNotStart, contains: "etcd exited: fatal: member has already been bootstrapped"},
		"check exit without reason": {containers: []corev1.ContainerStatus{term(render.VerifyCheckContainer, 3, "{}")}, done: true, reason: etcdv1beta2.ReasonVerificationFailed, contains: "code 3"},
		"past deadline":             {pastDeadline: true, done: true, reason: etcdv1beta2.ReasonVerificationFailed, contains: "did not finish in time"},
	} {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: tc.init, ContainerStatuses: tc.containers}}
		out, done := verifyOutcome(p, tc.pastDeadline)
		if done != tc.done || out.Reason != tc.reason || !strings.Contains(out.Error, tc.contains) {
			t.Errorf("%s: done %v, %+v", name, done, out)
		}
	}
}

// TestScheduledVerificationWakesItself: the verification controller is not woken by the
// backup controller's timers, so after an attempt that ends without a pod (here: no
// usable etcd version recorded) it asks to be woken at the schedule's next slot itself.
func TestScheduledVerificationWakesItself(t *testing.T) {
	eb := pvcBackup("verify-wake", 0)
	eb.CreationTimestamp = metav1.NewTime(testStart.Add(-2 * time.Hour))
	eb.Annotations = map[string]string{etcdv1beta2.BackupVerifyScheduleAnnotation: "@hourly"}
	eb.Status = etcdv1beta2.EtcdBackupStatus{Succeeded: true, EtcdVersion: "unknown", LastSuccessDate: metav1.NewTime(testStart.Add(-time.Hour)),
		Conditions: []metav1.Condition{{Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded,
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testStart)}}}
	h := newHarness(t, eb, mainCluster("verify-wake")...)
	res, err := h.verifier().Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key})
	if err != nil {
		t.Fatal(err)
	}
	if c := h.verified(); c == nil || c.Reason != etcdv1beta2.ReasonVerificationFailed || !strings.Contains(c.Message, "status.etcdVersion") {
		t.Fatalf("condition %+v, want %s naming status.etcdVersion", c, etcdv1beta2.ReasonVerificationFailed)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Hour {
		t.Errorf("requeue %v, want the next slot within the hour", res.RequeueAfter)
	}
}
