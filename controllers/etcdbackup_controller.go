package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// BackupCompressionAnnotation set to "gzip" on an EtcdBackup stores its snapshots
// gzip-compressed (the restore step decompresses by the object's own metadata).
const BackupCompressionAnnotation = "etcd.database.coreos.com/backup-compression"

// BackupConditionSucceeded is the EtcdBackup condition that reports the last attempt.
const BackupConditionSucceeded = "Succeeded"

// Reasons of the Succeeded condition.
const (
	ReasonBackupSucceeded        = "BackupSucceeded"
	ReasonUnsupportedStorageType = "UnsupportedStorageType"
	ReasonBackupInvalidSpec      = "InvalidSpec"
	ReasonSecretError            = "SecretError"
	ReasonAccessDenied           = "AccessDenied"
	ReasonBucketNotFound         = "BucketNotFound"
	ReasonStorageError           = "StorageError"
	ReasonSnapshotFailed         = "SnapshotFailed"
	ReasonTimeout                = "Timeout"
)

// defaultBackupTimeout applies when backupPolicy.timeoutInSecond is 0 (CoreOS's default).
const defaultBackupTimeout = 60 * time.Second

// Retry delays after a failed attempt: doubling from the first to the last.
const (
	backupRetryMin = 5 * time.Second
	backupRetryMax = 5 * time.Minute
)

// EtcdBackupReconciler takes one-shot and periodic snapshots of etcd clusters into an
// S3-compatible store, in-process: the snapshot is streamed from etcd straight into a
// multipart upload, so the operator holds only a few upload parts in memory.
//
// PVC storage is not done in-process: the operator runs as a pod and cannot mount a
// claim. It is reported as unsupported for now. The intended design: a short-lived Pod
// running this operator's image (a `backup` subcommand, to be added, streaming the
// snapshot into backup.NewFS(<mount>)) with the claim mounted, its outcome copied into
// this status.
//
// Deleting an EtcdBackup never deletes stored backups; CoreOS's finalizer is removed
// without doing anything else.
type EtcdBackupReconciler struct {
	client.Client
	// APIReader reads Secrets uncached, so the operator neither lists nor watches every
	// Secret in the cluster.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Now is the clock; tests may replace it.
	Now func() time.Time

	mu       sync.Mutex
	failures map[types.NamespacedName]int
}

// SetupWithManager watches EtcdBackups. Status writes are not spec changes: only
// generation or annotation changes wake the reconciler, the rest is timer-driven, so a
// failing backup is retried on its backoff rather than on its own status update.
func (r *EtcdBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.failures = map[types.NamespacedName]int{}
	return ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackup{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile takes a backup when one is due and records the outcome.
func (r *EtcdBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var eb etcdv1beta2.EtcdBackup
	if err := r.Get(ctx, req.NamespacedName, &eb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
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

	now := r.Now()
	interval := time.Duration(policyOf(&eb).BackupIntervalInSecond) * time.Second
	cond := meta.FindStatusCondition(eb.Status.Conditions, BackupConditionSucceeded)
	current := cond != nil && cond.ObservedGeneration == eb.Generation
	if current && cond.Status == metav1.ConditionTrue {
		if interval == 0 {
			return ctrl.Result{}, nil // one-shot, done
		}
		if due := eb.Status.LastSuccessDate.Add(interval); now.Before(due) {
			return ctrl.Result{RequeueAfter: due.Sub(now)}, nil
		}
	}

	res, err := r.takeBackup(ctx, &eb)
	if err != nil {
		var be *backupError
		if !errors.As(err, &be) {
			be = &backupError{reason: ReasonStorageError, err: err}
		}
		delay := r.nextRetry(req.NamespacedName)
		if interval > 0 && interval < delay {
			delay = interval
		}
		log.FromContext(ctx).Info("backup failed", "reason", be.reason, "error", be.err.Error(), "retryIn", delay)
		return ctrl.Result{RequeueAfter: delay}, r.fail(ctx, &eb, be.reason, be.err.Error())
	}
	r.forget(req.NamespacedName)

	orig := eb.DeepCopy()
	eb.Status.Succeeded = true
	eb.Status.Reason = ""
	eb.Status.EtcdVersion = res.version
	eb.Status.EtcdRevision = res.revision
	eb.Status.LastSuccessDate = metav1.NewTime(now)
	msg := fmt.Sprintf("snapshot of revision %d from %s stored as %s (%d bytes, sha256 %s)", res.revision, res.endpoint, res.location, res.obj.Size, res.obj.SHA256)
	if len(res.pruned) > 0 {
		msg += fmt.Sprintf("; retention removed %d older backups", len(res.pruned))
	}
	if res.retentionErr != nil {
		msg += "; retention failed: " + res.retentionErr.Error()
	}
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: BackupConditionSucceeded, Status: metav1.ConditionTrue, Reason: ReasonBackupSucceeded,
		Message: msg, ObservedGeneration: eb.Generation,
	})
	if err := r.Status().Patch(ctx, &eb, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Event(&eb, corev1.EventTypeNormal, ReasonBackupSucceeded, msg)
	if interval > 0 {
		return ctrl.Result{RequeueAfter: interval}, nil
	}
	return ctrl.Result{}, nil
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
		if s.S3 == nil {
			return ReasonBackupInvalidSpec, "storageType S3 needs spec.s3"
		}
		if _, _, err := backup.SplitS3Path(s.S3.Path); err != nil {
			return ReasonBackupInvalidSpec, err.Error()
		}
		if s.S3.AWSSecret == "" {
			return ReasonBackupInvalidSpec, "spec.s3.awsSecret is empty"
		}
	case etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeOSS:
		return ReasonUnsupportedStorageType, fmt.Sprintf("unsupported storage type %s, use S3 with the provider's S3-compatible endpoint (spec.s3.endpoint)", s.StorageType)
	case etcdv1beta2.BackupStorageTypePVC:
		return ReasonUnsupportedStorageType, "storage type PVC is not implemented yet; use S3"
	default:
		return ReasonUnsupportedStorageType, fmt.Sprintf("unknown storage type %q", s.StorageType)
	}
	if len(s.EtcdEndpoints) == 0 {
		return ReasonBackupInvalidSpec, "spec.etcdEndpoints is empty"
	}
	return "", ""
}

type backupError struct {
	reason string
	err    error
}

func (e *backupError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *backupError) Unwrap() error { return e.err }

type backupResult struct {
	obj          backup.Object
	location     string
	endpoint     string
	version      string
	revision     int64
	pruned       []string
	retentionErr error
}

// takeBackup streams one snapshot into the store, bounded by the backup's timeout.
func (r *EtcdBackupReconciler) takeBackup(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (*backupResult, error) {
	timeout := time.Duration(policyOf(eb).TimeoutInSecond) * time.Second
	if timeout <= 0 {
		timeout = defaultBackupTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := func(reason string, err error) error {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return &backupError{ReasonTimeout, fmt.Errorf("backup did not finish within %v (backupPolicy.timeoutInSecond): %w", timeout, err)}
		}
		return &backupError{reason, err}
	}

	store, key, err := r.s3Store(ctx, eb)
	if err != nil {
		return nil, err
	}
	cfg := etcdadmin.Config{Endpoints: eb.Spec.EtcdEndpoints, Log: log.FromContext(ctx)}
	if eb.Spec.ClientTLSSecret != "" {
		tlsCfg, err := loadClientTLS(ctx, r.APIReader, eb.Namespace, eb.Spec.ClientTLSSecret)
		if err != nil {
			return nil, &backupError{ReasonSecretError, err}
		}
		cfg.TLS = tlsCfg
	}
	// The retry budget of opening the stream must leave time for the upload.
	cfg.Retry.Budget = timeout / 3
	admin, err := etcdadmin.New(cfg)
	if err != nil {
		return nil, &backupError{ReasonSnapshotFailed, err}
	}
	defer admin.Close()
	snap, err := admin.Snapshot(ctx, etcdadmin.SnapshotOptions{})
	if err != nil {
		return nil, timedOut(ReasonSnapshotFailed, fmt.Errorf("open snapshot stream from %v: %w", eb.Spec.EtcdEndpoints, err))
	}
	defer snap.Close()

	if policyOf(eb).BackupIntervalInSecond > 0 {
		key = backup.PeriodicKey(key, snap.Revision, r.Now())
	}
	version := snap.ServerVersion
	opts := backup.PutOptions{Metadata: map[string]string{
		"etcd-revision":         strconv.FormatInt(snap.Revision, 10),
		"etcd-version":          version,
		"etcd-storage-version":  snap.Version,
		"etcd-member-id":        etcdadmin.FormatID(snap.MemberID),
		"etcd-backup-namespace": eb.Namespace,
		"etcd-backup-name":      eb.Name,
	}}
	switch c := eb.Annotations[BackupCompressionAnnotation]; c {
	case "", "none":
	case string(backup.CompressionGzip):
		opts.Compression = backup.CompressionGzip
	default:
		return nil, &backupError{ReasonBackupInvalidSpec, fmt.Errorf("annotation %s: unknown compression %q (gzip or none)", BackupCompressionAnnotation, c)}
	}
	obj, err := store.Put(ctx, key, snap, opts)
	if err != nil {
		return nil, timedOut(storageReason(err), err)
	}
	res := &backupResult{obj: obj, location: store.String() + "/" + key, endpoint: snap.Endpoint, version: version, revision: snap.Revision}
	if p := policyOf(eb); p.BackupIntervalInSecond > 0 && p.MaxBackups > 0 {
		_, base, _ := backup.SplitS3Path(eb.Spec.S3.Path)
		res.pruned, res.retentionErr = backup.Retain(ctx, store, base, p.MaxBackups)
		if len(res.pruned) > 0 {
			log.FromContext(ctx).Info("retention removed old backups", "keys", res.pruned)
		}
	}
	return res, nil
}

// s3Store builds the store from spec.s3 and its awsSecret.
func (r *EtcdBackupReconciler) s3Store(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (backup.Store, string, error) {
	s := eb.Spec.S3
	bucket, key, err := backup.SplitS3Path(s.Path)
	if err != nil {
		return nil, "", &backupError{ReasonBackupInvalidSpec, err}
	}
	store, err := newS3Store(ctx, r.APIReader, eb.Namespace, s, bucket)
	if err != nil {
		return nil, "", err
	}
	return store, key, nil
}

// newS3Store reads the awsSecret and builds the store. Errors name the Secret, never its
// contents.
func newS3Store(ctx context.Context, c client.Reader, namespace string, s *etcdv1beta2.S3BackupSource, bucket string) (backup.Store, error) {
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.AWSSecret}, &sec); err != nil {
		return nil, &backupError{ReasonSecretError, fmt.Errorf("read awsSecret %s/%s: %w", namespace, s.AWSSecret, err)}
	}
	creds, err := backup.ParseAWSSecret(sec.Data)
	if err != nil {
		return nil, &backupError{ReasonSecretError, fmt.Errorf("awsSecret %s/%s: %w", namespace, s.AWSSecret, err)}
	}
	store, err := backup.NewS3(backup.S3Config{Endpoint: s.Endpoint, Bucket: bucket, ForcePathStyle: s.ForcePathStyle, Credentials: creds})
	if err != nil {
		return nil, &backupError{ReasonBackupInvalidSpec, err}
	}
	return store, nil
}

func storageReason(err error) string {
	switch {
	case errors.Is(err, backup.ErrAccessDenied):
		return ReasonAccessDenied
	case errors.Is(err, backup.ErrBucketNotFound):
		return ReasonBucketNotFound
	default:
		return ReasonStorageError
	}
}

// fail records a failed attempt in the CoreOS fields and the condition. Earlier successes
// (lastSuccessDate, revision) stay as they were.
func (r *EtcdBackupReconciler) fail(ctx context.Context, eb *etcdv1beta2.EtcdBackup, reason, msg string) error {
	orig := eb.DeepCopy()
	eb.Status.Succeeded = false
	eb.Status.Reason = msg
	changed := meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: BackupConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason,
		Message: msg, ObservedGeneration: eb.Generation,
	})
	if !changed && orig.Status.Reason == msg && !orig.Status.Succeeded {
		return nil
	}
	if err := r.Status().Patch(ctx, eb, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Recorder.Event(eb, corev1.EventTypeWarning, reason, msg)
	return nil
}

func (r *EtcdBackupReconciler) nextRetry(key types.NamespacedName) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.failures[key]
	r.failures[key] = n + 1
	d := backupRetryMin << min(n, 10)
	return min(d, backupRetryMax)
}

func (r *EtcdBackupReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.failures, key)
	r.mu.Unlock()
}
