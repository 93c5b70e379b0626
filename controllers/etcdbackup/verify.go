package etcdbackup

import (
	"context"
	"fmt"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/schedule"
)

// Verified backups: after each backup, or on a schedule of their own, the newest backup
// is restored into a throwaway one-member etcd (render.VerifyPod) which must serve the
// revision and key count recorded when the backup was taken. One verification pod per
// EtcdBackup at a time (a fixed name); its result is read from its containers'
// termination messages, written to status (lastVerified*, the Verified condition), an
// event and metrics, and the pod is deleted.

const (
	// verifyStartTimeout is how long the restored member may take to serve.
	verifyStartTimeout = 2 * time.Minute
	// verifyDeadlineSlack is how long past the pod's own deadline the operator waits
	// for the kubelet's report before it gives the pod up itself.
	verifyDeadlineSlack = 30 * time.Second
	// annotationVerifyStarted on a verification pod is when the operator started it (its
	// own clock, the one status.lastSuccessDate is written with).
	annotationVerifyStarted = "etcd.database.coreos.com/verify-started"
)

// VerificationReconciler verifies an EtcdBackup's backups: it starts a verification when
// one is due and records the one that finished. It shares the backup controller's
// settings and never runs for an EtcdBackup while a backup reconcile of it does (busy).
type VerificationReconciler struct {
	*Reconciler
}

// SetupWithManager watches EtcdBackups for what makes a verification due (a spec or
// annotation change, a newly stored backup) and their verification pods.
func (v *VerificationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("etcdbackup-verification").
		For(&etcdv1beta2.EtcdBackup{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, backupStored))).
		// Verification pods' status changes (they finish) wake their EtcdBackup.
		Owns(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(isVerifyPod))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(v)
}

// backupStored passes updates that record a newly stored backup: one may be due for
// verification.
var backupStored = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*etcdv1beta2.EtcdBackup)
	n, ok2 := e.ObjectNew.(*etcdv1beta2.EtcdBackup)
	return ok1 && ok2 && !o.Status.LastSuccessDate.Equal(&n.Status.LastSuccessDate)
}}

// isVerifyPod: the pod is the verification pod of the EtcdBackup controlling it.
func isVerifyPod(o client.Object) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.Kind == "EtcdBackup" && o.GetName() == render.VerifyPodName(ref.Name)
}

// Reconcile finishes a running verification or starts one that is due. It reads the
// backup and its pod from the API, not the cache: the status the backup controller just
// wrote decides whether one is due, and a pod already finished and deleted must not be
// read twice.
func (v *VerificationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	unlock, ok := v.busy.tryLock(req.NamespacedName)
	if !ok {
		return ctrl.Result{RequeueAfter: busyRetry}, nil
	}
	defer unlock()
	return v.reconcileVerification(ctx, req)
}

// verification is when an EtcdBackup's backups are verified.
type verification struct {
	afterEach bool
	schedule  *schedule.Schedule
}

func (v verification) enabled() bool { return v.afterEach || v.schedule != nil }

// verificationOf reads the verification settings (v1 spec.verification, stored as the
// backup-verify-* annotations).
func verificationOf(eb *etcdv1beta2.EtcdBackup) (verification, error) {
	var v verification
	switch a := eb.Annotations[etcdv1beta2.BackupVerifyAfterEachAnnotation]; a {
	case "", "false":
	case "true":
		v.afterEach = true
	default:
		return v, fmt.Errorf("spec.verification.afterEachBackup (annotation %s): %q is not true or false", etcdv1beta2.BackupVerifyAfterEachAnnotation, a)
	}
	s, err := annotatedSchedule(eb, etcdv1beta2.BackupVerifyScheduleAnnotation, etcdv1beta2.BackupVerifyTimeZoneAnnotation, "spec.verification.schedule",
		fmt.Sprintf("spec.verification.timeZone (annotation %s) without a schedule", etcdv1beta2.BackupVerifyTimeZoneAnnotation))
	v.schedule = s
	return v, err
}

// verificationDue says whether a verification is due now, else how long until the next
// scheduled one (0: none scheduled). After each backup: a backup stored after the last
// verification started. On a schedule: a slot passed since then (one catch-up after
// missed slots, as for backups).
func verificationDue(eb *etcdv1beta2.EtcdBackup, v verification, now time.Time) (bool, time.Duration) {
	var last time.Time
	if t := eb.Status.LastVerificationStartTime; t != nil {
		last = t.Time
	}
	if v.afterEach && !eb.Status.LastSuccessDate.IsZero() && eb.Status.LastSuccessDate.After(last) {
		return true, 0
	}
	if v.schedule == nil {
		return false, 0
	}
	due, _, next := v.schedule.Due(last, eb.CreationTimestamp.Time, now)
	if due {
		return true, 0
	}
	return false, next.Sub(now)
}

// reconcileVerification is Reconcile, under the EtcdBackup's lock.
func (r *Reconciler) reconcileVerification(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	var eb etcdv1beta2.EtcdBackup
	if err := r.APIReader.Get(ctx, req.NamespacedName, &eb); err != nil {
		if apierrors.IsNotFound(err) {
			forgetVerifyMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !eb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.Now()
	if v, verr := verificationOf(&eb); verr == nil && v.schedule != nil {
		// The backup controller's timers, which checked verification too when one
		// reconcile did both, no longer wake this one: a schedule's next slot does.
		defer func() {
			if err == nil && res.RequeueAfter == 0 {
				res.RequeueAfter = scheduleWait(v, now)
			}
		}()
	}
	var pod corev1.Pod
	// From the API (the cache may lag); one an older operator started, without the label
	// the cache selects on, is labelled so that its end wakes this backup.
	err = r.unlabelledPod(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: render.VerifyPodName(eb.Name)}, &eb, &pod)
	if err == nil {
		return r.finishVerification(ctx, &eb, &pod, now)
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	v, err := verificationOf(&eb)
	if err != nil {
		return ctrl.Result{}, r.setVerified(ctx, &eb, verifiedUpdate{reason: etcdv1beta2.ReasonVerificationInvalidSpec, msg: err.Error()})
	}
	if !v.enabled() {
		return ctrl.Result{}, nil
	}
	if reason, _ := checkBackupSpec(&eb.Spec); reason != "" {
		return ctrl.Result{}, nil // the Succeeded condition says what is wrong
	}
	due, wait := verificationDue(&eb, v, now)
	if !due {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if eb.Status.LastSuccessDate.IsZero() {
		return ctrl.Result{RequeueAfter: scheduleWait(v, now)}, r.setVerified(ctx, &eb, verifiedUpdate{started: now,
			reason: etcdv1beta2.ReasonNothingToVerify, msg: "no backup has been stored yet"})
	}
	return r.startVerification(ctx, &eb, now)
}

// scheduleWait is how long until the schedule's next slot (0 without a schedule).
func scheduleWait(v verification, now time.Time) time.Duration {
	if v.schedule == nil {
		return 0
	}
	return v.schedule.Next(now).Sub(now)
}

// versionRE is an etcd version as status records it: it becomes part of an image name.
var versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)

// startVerification creates the verification pod for the backup's newest object: the
// one the controller picked on S3, the newest under the path on a PVC (which the
// operator cannot read).
func (r *Reconciler) startVerification(ctx context.Context, eb *etcdv1beta2.EtcdBackup, now time.Time) (ctrl.Result, error) {
	version := eb.Status.EtcdVersion
	if !versionRE.MatchString(version) {
		return ctrl.Result{}, r.setVerified(ctx, eb, verifiedUpdate{started: now, reason: etcdv1beta2.ReasonVerificationFailed,
			msg: fmt.Sprintf("the last backup recorded no usable etcd version (status.etcdVersion %q): nothing to restore it with", version)})
	}
	cluster := r.clusterOf(ctx, eb)
	spec := render.VerifyPodSpec{
		Backup: eb.Name, Namespace: eb.Namespace,
		OperatorImage: operatorimage.Or(r.OperatorImage), EtcdImage: render.Image(cluster.Spec, version),
		Inherit:        render.InheritedFrom(cluster),
		Latest:         periodic(eb),
		RestoreTimeout: backupTimeout(eb), StartTimeout: verifyStartTimeout,
	}
	spec.Deadline = spec.RestoreTimeout + spec.StartTimeout + backupPodStartGrace
	switch eb.Spec.StorageType {
	case etcdv1beta2.BackupStorageTypePVC:
		spec.PVC = eb.Spec.PVC
	default:
		s3, reason, msg := r.verifiedObjectS3(ctx, eb) // verify_object.go
		if s3 == nil {
			return ctrl.Result{}, r.setVerified(ctx, eb, verifiedUpdate{started: now, reason: reason, msg: msg})
		}
		spec.S3, spec.Latest = s3, false
	}
	pod, err := render.VerifyPod(spec)
	if err != nil {
		return ctrl.Result{}, r.setVerified(ctx, eb, verifiedUpdate{started: now, reason: etcdv1beta2.ReasonVerificationFailed, msg: err.Error()})
	}
	pod.Annotations = map[string]string{annotationVerifyStarted: now.UTC().Format(time.RFC3339)}
	if err := controllerutil.SetControllerReference(eb, pod, r.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("create verification pod: %w", err)
	}
	log.FromContext(ctx).Info("verification pod created", "pod", pod.Name, "etcdImage", spec.EtcdImage)
	// The pod's status changes wake us; this is only the deadline.
	return ctrl.Result{RequeueAfter: spec.Deadline + verifyDeadlineSlack}, nil
}

// clusterOf is the cluster the backup is of, for its image repository and what the
// verification pod inherits from its members; an empty cluster (the default repository,
// nothing inherited) when it is not found.
func (r *Reconciler) clusterOf(ctx context.Context, eb *etcdv1beta2.EtcdBackup) *etcdv1beta2.EtcdCluster {
	name := ""
	if ref := eb.Spec.ClusterRef; ref != nil {
		name = ref.Name
	} else if t, err := r.resolveTarget(ctx, eb); err == nil {
		name = t.Cluster
	}
	c := &etcdv1beta2.EtcdCluster{}
	if name == "" || r.Get(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: name}, c) != nil {
		return &etcdv1beta2.EtcdCluster{}
	}
	return c
}

// finishVerification records a finished verification and deletes its pod, or waits for
// one still running (until its deadline).
func (r *Reconciler) finishVerification(ctx context.Context, eb *etcdv1beta2.EtcdBackup, pod *corev1.Pod, now time.Time) (ctrl.Result, error) {
	if !metav1.IsControlledBy(pod, eb) {
		return ctrl.Result{RequeueAfter: foreignPodRecheck}, r.setVerified(ctx, eb, verifiedUpdate{reason: etcdv1beta2.ReasonVerificationFailed,
			msg: fmt.Sprintf("pod %s/%s exists and does not belong to this backup; verification resumes once it is gone", pod.Namespace, pod.Name)})
	}
	if pod.DeletionTimestamp != nil {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	started := verifyStarted(pod)
	deadline := started.Add(time.Duration(ptrValue(pod.Spec.ActiveDeadlineSeconds))*time.Second + verifyDeadlineSlack)
	out, done := verifyOutcome(pod, !now.Before(deadline))
	if !done {
		return ctrl.Result{RequeueAfter: deadline.Sub(now)}, nil
	}
	up := verifiedUpdate{started: started, reason: out.Reason, msg: out.message(sourceLocation(eb, out.Key))}
	if out.Reason == "" {
		up.reason, up.verified = etcdv1beta2.ReasonBackupVerified, &out
	}
	// Status first: should the deletion fail, the pod is read again, not a second one
	// started.
	if err := r.setVerified(ctx, eb, up); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.deletePod(ctx, pod); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// verifyStarted is when the operator started the pod (its annotation), else its creation.
func verifyStarted(pod *corev1.Pod) time.Time {
	if t, err := time.Parse(time.RFC3339, pod.Annotations[annotationVerifyStarted]); err == nil {
		return t
	}
	return pod.CreationTimestamp.Time
}

// sourceLocation names a verified object for messages: s3://<bucket>/<key> or
// pvc://<claim>/<path>.
func sourceLocation(eb *etcdv1beta2.EtcdBackup, key string) string {
	src := render.RestoreSource{S3: eb.Spec.S3, PVC: eb.Spec.PVC}
	if eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC {
		src.S3 = nil
		if key != "" {
			src.PVC = &etcdv1beta2.PVCBackupSource{ClaimName: eb.Spec.PVC.ClaimName, Path: key}
		}
		return src.Location()
	}
	src.PVC = nil
	if key != "" && eb.Spec.S3 != nil {
		if bucket, _, ok := cutBucket(eb.Spec.S3.Path); ok {
			s3 := *eb.Spec.S3
			s3.Path = bucket + "/" + key
			src.S3 = &s3
		}
	}
	return src.Location()
}

func cutBucket(p string) (bucket, key string, ok bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:], i > 0
		}
	}
	return "", "", false
}

// verifiedUpdate is one verification outcome for status.
type verifiedUpdate struct {
	started     time.Time // zero: not a verification attempt (e.g. an invalid spec)
	reason, msg string
	verified    *verifyOutcomeResult
}

// setVerified writes the Verified condition (True only with a verified result, whose
// object and revision become lastVerified*; a failure leaves them as they were), the
// attempt's start, an event and the metrics. Nothing is written when nothing changed.
func (r *Reconciler) setVerified(ctx context.Context, eb *etcdv1beta2.EtcdBackup, up verifiedUpdate) error {
	orig := eb.DeepCopy()
	now := r.Now()
	status, eventType := metav1.ConditionFalse, corev1.EventTypeWarning
	if up.verified != nil {
		status, eventType = metav1.ConditionTrue, corev1.EventTypeNormal
		eb.Status.LastVerifiedTime = timePtr(now)
		eb.Status.LastVerifiedKey = up.verified.Key
		eb.Status.LastVerifiedRevision = up.verified.Revision
		eb.Status.LastVerifiedSHA256 = up.verified.SHA256
		eb.Status.LastVerifiedPinSignature = r.pinSignature(eb, up.verified) // verify_pin.go
		markVerified(eb.Status.Backups, up.verified.Key, up.verified.Revision)
	}
	if !up.started.IsZero() {
		eb.Status.LastVerificationStartTime = timePtr(up.started)
	}
	changed := meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.BackupConditionVerified, Status: status, Reason: up.reason, Message: up.msg, ObservedGeneration: eb.Generation,
	})
	if !changed && up.started.IsZero() {
		return nil // e.g. the same invalid spec again
	}
	if err := r.Status().Patch(ctx, eb, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !up.started.IsZero() {
		recordVerification(eb.Namespace, eb.Name, up.reason, now)
	}
	r.Recorder.Event(eb, eventType, up.reason, up.msg)
	return nil
}
