// Package etcdbackup is the EtcdBackup controller: it takes one-shot and periodic
// snapshots of an etcd cluster into S3 (in-process) or a PersistentVolumeClaim (through
// a backup pod), resolving which members a backup may dial (backuptarget.go).
package etcdbackup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Backup pods (storage type PVC).
const (
	// BackupPodContainer is the container of a backup pod.
	BackupPodContainer = "backup"
	// LabelBackup on a backup pod holds its EtcdBackup's name.
	LabelBackup = "etcd.database.coreos.com/backup"
	// backupMountPath is where the claim is mounted in the backup pod.
	backupMountPath = "/backup"
	// backupTLSMountPath is where the client TLS secret is mounted in the backup pod.
	backupTLSMountPath = "/etc/etcd-operator/tls"
	// backupPodStartGrace is how long a backup pod may take to start (scheduling, image
	// pull, volume attach) on top of the backup's own timeout before it is given up.
	backupPodStartGrace = 2 * time.Minute
)

// defaultBackupTimeout applies when backupPolicy.timeoutInSecond is 0 (CoreOS's default).
const defaultBackupTimeout = 60 * time.Second

// maxBackupTimeout caps timeouts stored before admission bounded them: a century is
// "never" for a backup, and far enough from time.Duration's limit to add to.
const maxBackupTimeout = 100 * 365 * 24 * time.Hour

// Retry delays after a failed attempt: doubling from the first to the last.
const (
	backupRetryMin = 5 * time.Second
	backupRetryMax = 5 * time.Minute
)

// Reconciler takes one-shot and periodic snapshots of etcd clusters into an
// S3-compatible store, in-process: the snapshot is streamed from etcd straight into a
// multipart upload, so the operator holds only a few upload parts in memory.
//
// PVC storage is not done in-process: the operator runs as a pod and cannot mount a
// claim. For each backup it runs a short-lived Pod of its own image with the claim
// mounted (`etcd-operator backup`: the same streaming code into backup.FS, with the
// checksum sidecar and retention), waits for it, copies the result the pod wrote as its
// termination message (backup.JobResult: revision, version, checksum) into status and
// deletes the pod.
//
// Deleting an EtcdBackup never deletes stored backups; CoreOS's finalizer is removed
// without doing anything else.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets uncached, so the operator neither lists nor watches every
	// Secret in the cluster.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// OperatorImage is the image of backup pods (PVC storage); empty means
	// operatorimage.Default.
	OperatorImage string
	// ClusterDomain is the operator's DNS domain, for TLS members' names.
	ClusterDomain string
	// AllowExternalEndpoints lets spec.etcdEndpoints name etcd outside the backup's
	// namespace (--allow-external-backup-endpoints); off, a backup reaches only clusters
	// of its own namespace.
	AllowExternalEndpoints bool
	// S3Access is what the operator lends to reach S3 (--allow-ambient-s3-credentials).
	S3Access backupstorage.S3Access
	// AfterBackupStored is a failpoint for tests: when set, it runs after an S3 snapshot
	// was stored and before status records it, with the reconcile's context, the backup as
	// namespace/name and the object's location. A test that blocks in it until that
	// context ends simulates an operator killed between the upload and its record. Nil
	// in production.
	AfterBackupStored func(ctx context.Context, backup string, location string)
	// PinKey is the operator's pin key. Passed verifications are no longer signed with it
	// (verify_pin.go says why); it is kept for a verification whose report the operator
	// can check itself.
	PinKey []byte
	// BackupNowSpacing is the shortest time between two backup-now runs of one
	// EtcdBackup; 0: DefaultBackupNowSpacing. The e2e tests lower it.
	BackupNowSpacing time.Duration

	mu       sync.Mutex
	failures map[types.NamespacedName]int
	// retryAt holds the earliest next attempt after a failure, for the generation that
	// failed: events of the backup pods (e.g. its deletion) must not cut the back-off short.
	retryAt map[types.NamespacedName]retryState
	// lastBackupNow is when each backup last ran for a backup-now value: in memory, so a
	// tenant cannot move it back (an operator restart allows one run at once).
	lastBackupNow map[types.NamespacedName]time.Time
}

// DefaultBackupNowSpacing is the shortest time between two runs for backup-now values of
// one EtcdBackup (Reconciler.BackupNowSpacing): a new value sooner is honoured when the
// spacing has passed (values in between are one run), with a BackupNowDeferred event
// saying when.
const DefaultBackupNowSpacing = 5 * time.Minute

// backupNowSpacing is r.BackupNowSpacing or the default.
func (r *Reconciler) backupNowSpacing() time.Duration {
	if r.BackupNowSpacing > 0 {
		return r.BackupNowSpacing
	}
	return DefaultBackupNowSpacing
}

// backupNowWait is how long a backup-now value of key must still wait (0: it may run).
func (r *Reconciler) backupNowWait(key types.NamespacedName, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.lastBackupNow[key]
	if !ok || !now.Before(last.Add(r.backupNowSpacing())) {
		return 0
	}
	return last.Add(r.backupNowSpacing()).Sub(now)
}

// noteBackupNow records the outcome of a run that honoured a backup-now value (the
// spacing counts from the end of a run: a run in progress is never deferred).
func (r *Reconciler) noteBackupNow(key types.NamespacedName, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastBackupNow == nil {
		r.lastBackupNow = map[types.NamespacedName]time.Time{}
	}
	r.lastBackupNow[key] = now
}

type retryState struct {
	generation int64
	at         time.Time
}

// SetupWithManager watches EtcdBackups. Status writes are not spec changes: only
// generation or annotation changes wake the reconciler, the rest is timer-driven, so a
// failing backup is retried on its backoff rather than on its own status update.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.failures = map[types.NamespacedName]int{}
	r.retryAt = map[types.NamespacedName]retryState{}
	return ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackup{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Backup pods' status changes (they finish) wake their EtcdBackup.
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// reconcileBackup takes a backup when one is due and records the outcome.
func (r *Reconciler) reconcileBackup(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var eb etcdv1beta2.EtcdBackup
	if err := r.Get(ctx, req.NamespacedName, &eb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			r.mu.Lock()
			delete(r.lastBackupNow, req.NamespacedName)
			r.mu.Unlock()
			forgetBackupMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if controllerutil.ContainsFinalizer(&eb, etcdv1beta2.BackupFinalizer) {
		// CoreOS's operator added it to clean up; we keep every backup, so there is
		// nothing to wait for.
		controllerutil.RemoveFinalizer(&eb, etcdv1beta2.BackupFinalizer)
		if err := r.Update(ctx, &eb); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if !eb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	if reason, msg := checkBackupSpec(&eb.Spec); reason != "" {
		// A spec problem: retrying cannot help; a spec change wakes us.
		return ctrl.Result{}, r.fail(ctx, &eb, reason, msg)
	}
	if reason, msg := checkSchedule(&eb); reason != "" {
		return ctrl.Result{}, r.fail(ctx, &eb, reason, msg)
	}
	if _, err := compressionOf(&eb); err != nil {
		// Checked for every path before any work, so no path drops a value it cannot
		// honour (the PVC pod would have stored the snapshot uncompressed).
		return ctrl.Result{}, r.fail(ctx, &eb, etcdv1beta2.ReasonBackupInvalidSpec, err.Error())
	}

	now := r.Now()
	interval := policyOf(&eb).Interval()
	if manualRunDue(&eb) {
		if wait := r.backupNowWait(req.NamespacedName, now); wait > 0 {
			// Too soon after the last one: the schedule alone decides now; the value
			// is honoured by the next run, at the latest when the spacing has passed.
			sched := eb.DeepCopy()
			sched.Annotations[etcdv1beta2.BackupNowAnnotation] = eb.Status.LastBackupNow
			if next, due := backupDue(sched, now); !due {
				r.Recorder.Eventf(&eb, corev1.EventTypeNormal, etcdv1beta2.EventReasonBackupNowDeferred,
					"backup-now %.64q deferred: one backup-now run per %s; it runs in %s", eb.Annotations[etcdv1beta2.BackupNowAnnotation], r.backupNowSpacing(), wait.Round(time.Second))
				if next > 0 && next < wait {
					wait = next
				}
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
	}
	if wait, due := backupDue(&eb, now); !due {
		if wait > 0 {
			if err := r.noteNextRun(ctx, &eb, now.Add(wait)); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if wait := r.retryWait(req.NamespacedName, eb.Generation, now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC {
		return r.reconcilePVC(ctx, &eb, now, interval)
	}

	if stored, ok := r.runAlreadyStored(ctx, &eb, now); ok {
		return r.succeed(ctx, &eb, stored.Time, stored.result(), 0)
	}
	res, err := r.takeBackup(ctx, &eb)
	took := r.Now().Sub(now)
	if err != nil {
		return r.failed(ctx, &eb, interval, err, took)
	}
	if hook := r.AfterBackupStored; hook != nil {
		hook(ctx, req.String(), res.Location)
	}
	return r.succeed(ctx, &eb, now, backup.NewJobResult(res), took)
}

// failed records a failed attempt and schedules the retry: backing off, but never later
// than the next periodic backup.
func (r *Reconciler) failed(ctx context.Context, eb *etcdv1beta2.EtcdBackup, interval time.Duration, err error, took time.Duration) (ctrl.Result, error) {
	var be *backupstorage.Error
	if !errors.As(err, &be) {
		be = &backupstorage.Error{Reason: etcdv1beta2.ReasonStorageError, Err: err}
	}
	recordBackup(eb.Namespace, eb.Name, be.Reason, took, time.Time{}, 0)
	delay := r.nextRetry(client.ObjectKeyFromObject(eb))
	if interval > 0 && interval < delay {
		delay = interval
	}
	r.mu.Lock()
	r.retryAt[client.ObjectKeyFromObject(eb)] = retryState{generation: eb.Generation, at: r.Now().Add(delay)}
	r.mu.Unlock()
	log.FromContext(ctx).Info("backup failed", "reason", be.Reason, "error", be.Err.Error(), "retryIn", delay)
	return ctrl.Result{RequeueAfter: delay}, r.fail(ctx, eb, be.Reason, be.Err.Error())
}

// backupDue says whether a backup is due now, else how long until it is (0: never,
// a one-shot backup that succeeded for this generation).
func backupDue(eb *etcdv1beta2.EtcdBackup, now time.Time) (time.Duration, bool) {
	if manualRunDue(eb) {
		return 0, true
	}
	if s, _ := cronScheduleOf(eb); s != nil {
		return cronDue(eb, s, now)
	}
	interval := policyOf(eb).Interval()
	cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
	if cond == nil || cond.ObservedGeneration != eb.Generation || cond.Status != metav1.ConditionTrue {
		return 0, true
	}
	if interval == 0 {
		return 0, false // one-shot, done
	}
	if due := eb.Status.LastSuccessDate.Add(interval); now.Before(due) {
		return due.Sub(now), false
	}
	return 0, true
}

// succeed records a stored backup in status and an event.
func (r *Reconciler) succeed(ctx context.Context, eb *etcdv1beta2.EtcdBackup, now time.Time, res backup.JobResult, took time.Duration) (ctrl.Result, error) {
	r.forget(client.ObjectKeyFromObject(eb))
	recordBackup(eb.Namespace, eb.Name, etcdv1beta2.ReasonBackupSucceeded, took, now, res.Size)
	if manualRunDue(eb) {
		r.noteBackupNow(client.ObjectKeyFromObject(eb), r.Now())
	}
	orig := eb.DeepCopy()
	eb.Status.Succeeded = true
	eb.Status.Reason = ""
	if res.Version != "" || res.Revision != 0 {
		eb.Status.EtcdVersion = res.Version
		eb.Status.EtcdRevision = res.Revision
	}
	eb.Status.LastSuccessDate = metav1.NewTime(now)
	eb.Status.Backups = r.holdings(ctx, eb)
	next := recordScheduledRun(eb, now)
	msg := fmt.Sprintf("snapshot of revision %d from %s stored as %s (%d bytes, sha256 %s)", res.Revision, res.Endpoint, res.Location, res.Size, res.SHA256)
	if res.Location == "" {
		msg = "backup pod succeeded but reported no result (no termination message)"
	}
	if res.Pruned > 0 {
		msg += fmt.Sprintf("; retention removed %d older backups", res.Pruned)
	}
	if res.RetentionError != "" {
		msg += "; retention failed: " + res.RetentionError
	}
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded,
		Message: msg, ObservedGeneration: eb.Generation,
	})
	if err := r.Status().Patch(ctx, eb, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Event(eb, corev1.EventTypeNormal, etcdv1beta2.ReasonBackupSucceeded, msg)
	if !next.IsZero() {
		return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
	}
	return ctrl.Result{}, nil
}

// periodic: eb takes backups on an interval or a schedule (each under its own object
// name, kept by maxBackups), not one backup under spec's path.
func periodic(eb *etcdv1beta2.EtcdBackup) bool {
	return policyOf(eb).BackupIntervalInSecond > 0 || eb.Annotations[etcdv1beta2.BackupScheduleAnnotation] != ""
}

// failedThisGeneration: the last attempt for the current spec failed.
func failedThisGeneration(eb *etcdv1beta2.EtcdBackup) bool {
	cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
	return cond != nil && cond.ObservedGeneration == eb.Generation && cond.Status == metav1.ConditionFalse
}

func policyOf(eb *etcdv1beta2.EtcdBackup) etcdv1beta2.BackupPolicy {
	if eb.Spec.BackupPolicy == nil {
		return etcdv1beta2.BackupPolicy{}
	}
	return *eb.Spec.BackupPolicy
}

// checkBackupSpec finds what no retry can fix.
func checkBackupSpec(s *etcdv1beta2.EtcdBackupSpec) (reason, msg string) {
	switch s.StorageType {
	case etcdv1beta2.BackupStorageTypeS3:
		if reason, msg := backupstorage.CheckS3Source(s.S3, "storageType"); reason != "" {
			return reason, msg
		}
	case etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeOSS:
		return backupstorage.UnsupportedProvider(s.StorageType)
	case etcdv1beta2.BackupStorageTypePVC:
		if s.PVC == nil {
			return etcdv1beta2.ReasonBackupInvalidSpec, "storageType PVC needs spec.pvc"
		}
		if s.PVC.ClaimName == "" || s.PVC.Path == "" {
			return etcdv1beta2.ReasonBackupInvalidSpec, "spec.pvc needs claimName and path"
		}
		if strings.HasSuffix(s.PVC.Path, "/") || path.Clean("/"+s.PVC.Path) == "/" {
			return etcdv1beta2.ReasonBackupInvalidSpec, fmt.Sprintf("spec.pvc.path %q names no file", s.PVC.Path)
		}
	default:
		return etcdv1beta2.ReasonUnsupportedStorageType, fmt.Sprintf("unknown storage type %q", s.StorageType)
	}
	if s.ClusterRef == nil && len(s.EtcdEndpoints) == 0 {
		return etcdv1beta2.ReasonBackupInvalidSpec, "give spec.clusterRef or spec.etcdEndpoints"
	}
	if s.ClusterRef != nil && s.ClusterRef.Name == "" {
		return etcdv1beta2.ReasonBackupInvalidSpec, "spec.clusterRef.name is empty"
	}
	return "", ""
}

// compressionOf reads the compression annotation.
func compressionOf(eb *etcdv1beta2.EtcdBackup) (backup.Compression, error) {
	switch c := eb.Annotations[etcdv1beta2.BackupCompressionAnnotation]; c {
	case "", "none":
		return backup.CompressionNone, nil
	case string(backup.CompressionGzip):
		return backup.CompressionGzip, nil
	default:
		return "", fmt.Errorf("annotation %s: unknown compression %q (gzip or none)", etcdv1beta2.BackupCompressionAnnotation, c)
	}
}

// takeBackup streams one snapshot into the store, bounded by the backup's timeout.
func (r *Reconciler) takeBackup(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (*backup.SnapshotResult, error) {
	timeout := backupTimeout(eb)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Nothing is read or dialled before the target is known to be allowed.
	target, err := r.resolveTarget(ctx, eb)
	if err != nil {
		return nil, err
	}
	timedOut := func(reason string, err error) error {
		// A certificate problem is reported as what it is: the retries that ran into
		// the timeout could never have succeeded.
		if etcdadmin.IsTLSError(err) {
			return dialFailure(ctx, target, etcdv1beta2.ReasonTLSError, fmt.Errorf("TLS with the etcd members failed (check spec.clientTLSSecret): %w", err))
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return dialFailure(ctx, target, etcdv1beta2.ReasonTimeout, fmt.Errorf("backup did not finish within %v (backupPolicy.timeoutInSecond): %w", timeout, err))
		}
		if reason == etcdv1beta2.ReasonSnapshotFailed {
			return dialFailure(ctx, target, reason, err)
		}
		return &backupstorage.Error{Reason: reason, Err: err}
	}

	store, key, err := r.s3Store(ctx, eb)
	if err != nil {
		return nil, err
	}
	cfg := etcdadmin.Config{Endpoints: target.Endpoints, Log: log.FromContext(ctx)}
	if target.TLSSecret != "" {
		tlsCfg, err := etcdadmin.ClientTLSFromSecret(ctx, r.APIReader, eb.Namespace, target.TLSSecret)
		if err != nil {
			return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonSecretError, Err: err}
		}
		cfg.TLS = tlsCfg
	}
	if cfg.Username, cfg.Password, err = r.rootCredentials(ctx, eb.Namespace, target); err != nil { // auth.go
		return nil, err
	}
	// The retry budget of opening the stream must leave time for the upload.
	cfg.Retry.Budget = timeout / 3
	admin, err := etcdadmin.New(cfg)
	if err != nil {
		return nil, dialFailure(ctx, target, etcdv1beta2.ReasonSnapshotFailed, err)
	}
	defer admin.Close()
	req := backup.SnapshotRequest{
		Key:        key,
		Periodic:   periodic(eb),
		MaxBackups: policyOf(eb).MaxBackups,
		MaxAge:     policyOf(eb).MaxAge(),
		Now:        r.Now(),
		// Retention counts and deletes only objects naming this EtcdBackup; restores
		// choose only among them (backupselect). The UID is on record, not required: a
		// backup recreated under the same name still owns its predecessor's objects.
		Owner:    map[string]string{backupselect.MetaBackupNamespace: eb.Namespace, backupselect.MetaBackupName: eb.Name},
		Metadata: map[string]string{backupselect.MetaBackupUID: string(eb.UID)},
	}
	if req.Compression, err = compressionOf(eb); err != nil {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	res, err := backup.SaveSnapshot(ctx, admin, store, req)
	if errors.Is(err, backup.ErrSnapshot) {
		return nil, timedOut(etcdv1beta2.ReasonSnapshotFailed, fmt.Errorf("%v: %w", target.Endpoints, err))
	}
	if err != nil {
		return nil, timedOut(backupstorage.Reason(err), err)
	}
	if len(res.Pruned) > 0 {
		log.FromContext(ctx).Info("retention removed old backups", "keys", res.Pruned)
	}
	return res, nil
}

// s3Store builds the store from spec.s3 and its awsSecret.
func (r *Reconciler) s3Store(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (backup.Store, string, error) {
	s := eb.Spec.S3
	bucket, key, err := backup.SplitS3Path(s.Path)
	if err != nil {
		return nil, "", &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	store, err := r.S3Access.OpenFor(ctx, r.APIReader, eb.Namespace, eb.Name, s, bucket)
	if err != nil {
		return nil, "", err
	}
	return store, key, nil
}

// fail records a failed attempt in the CoreOS fields and the condition. Earlier successes
// (lastSuccessDate, revision) stay as they were.
func (r *Reconciler) fail(ctx context.Context, eb *etcdv1beta2.EtcdBackup, reason, msg string) error {
	orig := eb.DeepCopy()
	if manualRunDue(eb) {
		r.noteBackupNow(client.ObjectKeyFromObject(eb), r.Now())
	}
	eb.Status.Succeeded = false
	eb.Status.Reason = msg
	// A backup-now request is answered by this attempt, failed or not: the next value
	// asks again.
	eb.Status.LastBackupNow = eb.Annotations[etcdv1beta2.BackupNowAnnotation]
	changed := meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason,
		Message: msg, ObservedGeneration: eb.Generation,
	})
	if !changed && orig.Status.Reason == msg && !orig.Status.Succeeded && orig.Status.LastBackupNow == eb.Status.LastBackupNow {
		return nil
	}
	if err := r.Status().Patch(ctx, eb, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Recorder.Event(eb, corev1.EventTypeWarning, reason, msg)
	return nil
}

func (r *Reconciler) nextRetry(key types.NamespacedName) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.failures[key]
	r.failures[key] = n + 1
	d := backupRetryMin << min(n, 10)
	return min(d, backupRetryMax)
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.failures, key)
	delete(r.retryAt, key)
	r.mu.Unlock()
}

// retryWait is how long the back-off after a failure of this generation still runs; a
// changed spec is tried at once.
func (r *Reconciler) retryWait(key types.NamespacedName, generation int64, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.retryAt[key]
	if !ok || st.generation != generation || !now.Before(st.at) {
		return 0
	}
	return st.at.Sub(now)
}

// reconcilePVC runs one backup into a claim through a backup pod: it creates the pod
// when none runs, and when the pod has finished copies its result into status and
// deletes it. One pod at a time per EtcdBackup (a fixed name), so a retried reconcile
// never starts a second backup.
func (r *Reconciler) reconcilePVC(ctx context.Context, eb *etcdv1beta2.EtcdBackup, now time.Time, interval time.Duration) (ctrl.Result, error) {
	timeout := backupTimeout(eb)
	var pod corev1.Pod
	err := r.Get(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: backupPodName(eb)}, &pod)
	if apierrors.IsNotFound(err) {
		// The cache holds only pods labelled render.OwnedSelector; a backup pod an older
		// operator started lacks the label: read it from the API and label it.
		err = r.unlabelledPod(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: backupPodName(eb)}, eb, &pod)
	}
	if apierrors.IsNotFound(err) {
		// The cache may lag behind our own status write of a just-finished backup:
		// check against the API before starting another one.
		var fresh etcdv1beta2.EtcdBackup
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(eb), &fresh); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if wait, due := backupDue(&fresh, now); !due {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		target, err := r.resolveTarget(ctx, eb)
		if err != nil {
			return r.failed(ctx, eb, interval, err, 0)
		}
		pod := r.backupPod(eb, target)
		if err := controllerutil.SetControllerReference(eb, pod, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return r.failed(ctx, eb, interval, &backupstorage.Error{Reason: etcdv1beta2.ReasonStorageError, Err: fmt.Errorf("create backup pod: %w", err)}, 0)
		}
		log.FromContext(ctx).Info("backup pod created", "pod", pod.Name, "claim", eb.Spec.PVC.ClaimName)
		// The pod's status changes wake us; this is only the deadline.
		return ctrl.Result{RequeueAfter: timeout + backupPodStartGrace}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !metav1.IsControlledBy(&pod, eb) {
		// Never touched, but looked at again: its deletion does not wake this backup (it
		// names no owner we watch), and a periodic backup must resume once it is gone.
		return ctrl.Result{RequeueAfter: foreignPodRecheck}, r.fail(ctx, eb, etcdv1beta2.ReasonBackupInvalidSpec,
			fmt.Sprintf("pod %s/%s exists and does not belong to this backup; the backup resumes once it is gone", pod.Namespace, pod.Name))
	}
	if pod.DeletionTimestamp != nil {
		return ctrl.Result{RequeueAfter: time.Second}, nil // the last one is going away
	}

	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
	default:
		deadline := pod.CreationTimestamp.Add(timeout + backupPodStartGrace)
		if now.Before(deadline) {
			return ctrl.Result{RequeueAfter: deadline.Sub(now)}, nil
		}
		if err := r.deletePod(ctx, &pod); err != nil {
			return ctrl.Result{}, err
		}
		return r.failed(ctx, eb, interval, &backupstorage.Error{Reason: etcdv1beta2.ReasonTimeout, Err: fmt.Errorf(
			"backup pod %s did not finish within %v (backupPolicy.timeoutInSecond plus %v to start; phase %s)", pod.Name, timeout, backupPodStartGrace, pod.Status.Phase)},
			now.Sub(pod.CreationTimestamp.Time))
	}

	res, exit, resErr := podResult(&pod)
	if err := r.deletePod(ctx, &pod); err != nil {
		return ctrl.Result{}, err
	}
	took := podRunTime(&pod)
	if pod.Status.Phase == corev1.PodSucceeded {
		if resErr != nil {
			log.FromContext(ctx).Info("backup pod succeeded without a readable result", "pod", pod.Name, "error", resErr.Error())
		}
		res.Location = strings.Replace(res.Location, "file://"+backupMountPath, "pvc://"+eb.Spec.PVC.ClaimName, 1)
		return r.succeed(ctx, eb, now, res, took)
	}
	reason, msg := res.Reason, res.Error
	if reason == "" {
		reason, msg = etcdv1beta2.ReasonBackupPodFailed, fmt.Sprintf("backup pod %s failed (%s)", pod.Name, exit)
		if res.Error != "" {
			// A result's error, or (FallbackToLogsOnError) the log's tail when the
			// program died before writing one: its last line says why.
			msg += ": " + render.LastMessageLine(res.Error)
		}
	}
	if podDialedExternal(&pod) && (reason == etcdv1beta2.ReasonSnapshotFailed || reason == etcdv1beta2.ReasonTimeout || reason == etcdv1beta2.ReasonTLSError) {
		return r.failed(ctx, eb, interval, dialFailure(ctx, &backupTarget{}, reason, errors.New(msg)), took)
	}
	return r.failed(ctx, eb, interval, &backupstorage.Error{Reason: reason, Err: errors.New(msg)}, took)
}

// podRunTime is how long a finished backup pod's container ran (0 if unknown).
func podRunTime(pod *corev1.Pod) time.Duration {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == BackupPodContainer && t != nil && !t.StartedAt.IsZero() {
			return t.FinishedAt.Sub(t.StartedAt.Time)
		}
	}
	return 0
}

func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// podResult reads the backup container's termination message. exit describes how the
// container ended, for messages.
func podResult(pod *corev1.Pod) (res backup.JobResult, exit string, err error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != BackupPodContainer || cs.State.Terminated == nil {
			continue
		}
		t := cs.State.Terminated
		exit = fmt.Sprintf("exit code %d", t.ExitCode)
		if t.Reason != "" {
			exit += ", " + t.Reason
		}
		if t.Message == "" {
			return backup.JobResult{}, exit, errors.New("no termination message")
		}
		res, err = backup.ParseJobResult(t.Message)
		if err != nil {
			// FallbackToLogsOnError: the message is the log's tail, not JSON.
			return backup.JobResult{Error: t.Message}, exit, err
		}
		return res, exit, nil
	}
	return backup.JobResult{}, "container status unknown", errors.New("no terminated backup container")
}

// foreignPodRecheck is how often a backup whose pod name is taken by a pod it does not
// control looks again.
const foreignPodRecheck = time.Minute

// backupTimeout is the backup's timeout, saturated at maxBackupTimeout so that deadlines
// computed from it (plus the pod start grace) cannot overflow.
func backupTimeout(eb *etcdv1beta2.EtcdBackup) time.Duration {
	t := policyOf(eb).Timeout()
	if t <= 0 {
		return defaultBackupTimeout
	}
	return min(t, maxBackupTimeout)
}

// unlabelledPod reads the named pod (backup or verification) from the API server,
// bypassing the cache. A pod this backup controls that lacks the label the cache selects
// on (made by an operator older than the label-selected cache) is labelled, so its
// changes wake the backup again.
func (r *Reconciler) unlabelledPod(ctx context.Context, key client.ObjectKey, eb *etcdv1beta2.EtcdBackup, pod *corev1.Pod) error {
	if err := r.APIReader.Get(ctx, key, pod); err != nil {
		return err
	}
	if metav1.IsControlledBy(pod, eb) && pod.Labels[render.LabelApp] != render.AppOperatorPod {
		orig := pod.DeepCopy()
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[render.LabelApp] = render.AppOperatorPod
		if err := r.Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("label backup pod %s: %w", key.Name, err)
		}
	}
	return nil
}

// backupPodName is <backup>-backup, shortened with a hash to a valid label (pod names
// become hostnames).
func backupPodName(eb *etcdv1beta2.EtcdBackup) string {
	name := eb.Name + "-backup"
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(eb.Name))
	return strings.TrimRight(eb.Name[:45], "-.") + "-backup-" + hex.EncodeToString(sum[:])[:10]
}

// backupPod is the pod that runs one PVC backup: the operator's image, the `backup`
// subcommand, the claim at backupMountPath, the client TLS secret if any. It needs no
// API access, so no service account token is mounted.
func (r *Reconciler) backupPod(eb *etcdv1beta2.EtcdBackup, target *backupTarget) *corev1.Pod {
	image := operatorimage.Or(r.OperatorImage)
	p := policyOf(eb)
	args := []string{
		"backup",
		"--endpoints=" + strings.Join(target.Endpoints, ","),
		"--dir=" + backupMountPath,
		"--key=" + strings.TrimPrefix(path.Clean("/"+eb.Spec.PVC.Path), "/"),
		"--timeout=" + backupTimeout(eb).String(),
	}
	if periodic(eb) {
		args = append(args, "--periodic", fmt.Sprintf("--max-backups=%d", p.MaxBackups))
		if age := p.MaxAge(); age > 0 {
			args = append(args, "--max-age="+age.String())
		}
	}
	if c, _ := compressionOf(eb); c != backup.CompressionNone { // checked before the pod
		args = append(args, "--compression="+string(c))
	}
	mounts := []corev1.VolumeMount{{Name: "backup", MountPath: backupMountPath}}
	volumes := []corev1.Volume{{Name: "backup", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: eb.Spec.PVC.ClaimName}}}}
	if target.TLSSecret != "" {
		args = append(args, "--tls-dir="+backupTLSMountPath)
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: backupTLSMountPath, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: target.TLSSecret}}})
	}
	label := eb.Name
	if len(label) > 63 {
		label = backupPodName(eb)
	}
	deadline := int64((backupTimeout(eb) + backupPodStartGrace) / time.Second)
	// The member pods' "restricted" defaults; the fsGroup makes the claim writable.
	podSC, _ := render.PodSecurityContext(nil) // cannot fail without user input
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: backupPodName(eb), Namespace: eb.Namespace,
			Labels:      map[string]string{LabelBackup: label, render.LabelApp: render.AppOperatorPod, "app.kubernetes.io/managed-by": "etcd-operator"},
			Annotations: backupPodAnnotations(target),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:        &deadline,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              podSC,
			Containers: []corev1.Container{{
				Name:    BackupPodContainer,
				Image:   image,
				Command: []string{render.OperatorCommand},
				Args:    args,
				// The result is JSON written there; should the program die before
				// writing it, the log's tail explains.
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts:             mounts,
				Env:                      rootPasswordEnv(target), // auth.go
				SecurityContext:          render.ContainerSecurityContext(),
			}},
			Volumes: volumes,
		},
	}
	target.Inherit.ApplyTo(&pod.Spec)
	return pod
}
