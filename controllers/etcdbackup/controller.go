// Package etcdbackup holds the EtcdBackup's two controllers. The backup controller
// (Reconciler, this file) takes one-shot and periodic snapshots of an etcd cluster into
// S3 (in-process) or a PersistentVolumeClaim (through a backup pod, pvc.go), resolving
// which members a backup may dial (backuptarget.go); it writes status once per reconcile
// (status.go). The verification controller (VerificationReconciler, verify.go) restores
// the newest backup into a throwaway member to check it.
package etcdbackup

import (
	"context"
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
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

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

	// busy keeps the backup and the verification reconciles of one EtcdBackup apart:
	// their status patches replace lists (conditions, backups) whole.
	busy keyLock

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

// SetupWithManager registers the EtcdBackup's two controllers: this one takes backups,
// the VerificationReconciler (verify.go) verifies them. Status writes are not spec
// changes: only generation or annotation changes wake the backup controller, the rest is
// timer-driven, so a failing backup is retried on its backoff rather than on its own
// status update.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.failures = map[types.NamespacedName]int{}
	r.retryAt = map[types.NamespacedName]retryState{}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackup{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Backup pods' status changes (they finish) wake their EtcdBackup.
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r); err != nil {
		return err
	}
	return (&VerificationReconciler{Reconciler: r}).SetupWithManager(mgr)
}

// Reconcile takes a backup when one is due and records the outcome: the phases below
// change the scope's status, written once when Reconcile returns (status.go).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	unlock, ok := r.busy.tryLock(req.NamespacedName)
	if !ok {
		return ctrl.Result{RequeueAfter: busyRetry}, nil
	}
	defer unlock()
	// Read from the API server, not the cache: the verification reconciler may have
	// patched status just before releasing the lock, and this reconcile's one status
	// patch (a merge patch replacing conditions and backups whole) would put a stale
	// cached copy's lists back.
	var eb etcdv1beta2.EtcdBackup
	if err := r.APIReader.Get(ctx, req.NamespacedName, &eb); err != nil {
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
	s := newScope(&eb)
	defer func() {
		if serr := r.updateStatus(ctx, s); serr != nil {
			res, err = ctrl.Result{}, errors.Join(err, serr)
		}
	}()
	return r.reconcileBackup(ctx, s)
}

// reconcileBackup checks the spec, waits for the backup's time and back-off, and takes
// the backup: in-process into S3, through a backup pod into a claim (pvc.go).
func (r *Reconciler) reconcileBackup(ctx context.Context, s *scope) (ctrl.Result, error) {
	eb := s.eb
	key := client.ObjectKeyFromObject(eb)
	if reason, msg := checkBackupSpec(&eb.Spec); reason != "" {
		// A spec problem: retrying cannot help; a spec change wakes us.
		r.fail(s, reason, msg)
		return ctrl.Result{}, nil
	}
	if reason, msg := checkSchedule(eb); reason != "" {
		r.fail(s, reason, msg)
		return ctrl.Result{}, nil
	}
	if _, err := compressionOf(eb); err != nil {
		// Checked for every path before any work, so no path drops a value it cannot
		// honour (the PVC pod would have stored the snapshot uncompressed).
		r.fail(s, etcdv1beta2.ReasonBackupInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}

	now := r.Now()
	interval := policyOf(eb).Interval()
	if manualRunDue(eb) {
		if wait := r.backupNowWait(key, now); wait > 0 {
			// Too soon after the last one: the schedule alone decides now; the value
			// is honoured by the next run, at the latest when the spacing has passed.
			sched := eb.DeepCopy()
			sched.Annotations[etcdv1beta2.BackupNowAnnotation] = eb.Status.LastBackupNow
			if next, due := backupDue(sched, now); !due {
				r.Recorder.Eventf(eb, corev1.EventTypeNormal, etcdv1beta2.EventReasonBackupNowDeferred,
					"backup-now %.64q deferred: one backup-now run per %s; it runs in %s", eb.Annotations[etcdv1beta2.BackupNowAnnotation], r.backupNowSpacing(), wait.Round(time.Second))
				if next > 0 && next < wait {
					wait = next
				}
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
	}
	if wait, due := backupDue(eb, now); !due {
		if wait > 0 {
			noteNextRun(s, now.Add(wait))
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if wait := r.retryWait(key, eb.Generation, now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if name, err := r.hibernatedCluster(ctx, eb); err != nil {
		return ctrl.Result{}, err
	} else if name != "" {
		return r.skipHibernated(s, name), nil // hibernated.go
	}
	if eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC {
		return r.reconcilePVC(ctx, s, now, interval)
	}

	if stored, ok := r.runAlreadyStored(ctx, eb, now); ok {
		return r.succeed(ctx, s, stored.Time, stored.result(), 0)
	}
	res, err := r.takeBackup(ctx, eb)
	took := r.Now().Sub(now)
	if err != nil {
		return r.failed(ctx, s, interval, err, took)
	}
	if hook := r.AfterBackupStored; hook != nil {
		hook(ctx, key.String(), res.Location)
	}
	return r.succeed(ctx, s, now, backup.NewJobResult(res), took)
}

// failed records a failed attempt and schedules the retry: backing off, but never later
// than the next periodic backup.
func (r *Reconciler) failed(ctx context.Context, s *scope, interval time.Duration, err error, took time.Duration) (ctrl.Result, error) {
	eb := s.eb
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
	r.fail(s, be.Reason, be.Err.Error())
	return ctrl.Result{RequeueAfter: delay}, nil
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

func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
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
