package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// DefaultOperatorImage is the image the restore init container runs when the operator is
// not told its own image (--operator-image, OPERATOR_IMAGE): the bundle's image name.
const DefaultOperatorImage = "etcd-operator:v0.1.0"

// RestoreClusterSpecAnnotation on an EtcdRestore holds, as JSON, an EtcdClusterSpec for
// the cluster to create (size, version, repository, pod policy, TLS...). CoreOS's
// EtcdRestore names only the cluster: CoreOS copied the spec of the cluster it deleted,
// which this operator never does. Without the annotation the new cluster has
// DefaultRestoreSize members and the etcd version recorded with the backup (else
// v1beta2.DefaultVersion).
const RestoreClusterSpecAnnotation = "etcd.database.coreos.com/restore-cluster-spec"

// DefaultRestoreSize is the size of a restored cluster unless the spec annotation says
// otherwise.
const DefaultRestoreSize = 3

// RestoreConditionSucceeded is the EtcdRestore condition: Unknown while the new cluster
// starts, True once it is Available, False when the restore is refused or failed.
const RestoreConditionSucceeded = "Succeeded"

// Reasons of the EtcdRestore condition (besides the backup reasons shared with
// EtcdBackup: UnsupportedStorageType, InvalidSpec, SecretError, AccessDenied,
// BucketNotFound, StorageError).
const (
	ReasonClusterExists     = "ClusterExists"
	ReasonBackupNotFound    = "BackupNotFound"
	ReasonChecksumMismatch  = "ChecksumMismatch"
	ReasonRestoring         = "Restoring"
	ReasonRestoreStepFailed = "RestoreStepFailed"
	ReasonRestoreComplete   = "Restored"
)

// restoreRetry is the delay before a failed lookup of the backup (a store that is down,
// a secret not created yet) is tried again.
const restoreRetry = 15 * time.Second

// EtcdRestoreReconciler creates a new EtcdCluster from a backup. It never deletes or
// changes an existing cluster: if the name is taken by a cluster it did not create, the
// restore is refused with ReasonClusterExists and nothing is touched (CoreOS deleted that
// cluster and recreated it).
//
// The backup is resolved here, once: spec.s3.path is an exact object if one exists at
// that key, else the prefix of periodic backups (<path>_v<rev>_<time>) whose newest is
// taken. The object is read through once (streamed, constant memory) to verify its
// SHA-256 before anything is created, so a corrupted backup fails here with
// ReasonChecksumMismatch rather than in crash-looping member pods. The chosen object and
// its SHA-256 are written into the new cluster's
// render.AnnotationRestore, so every bootstrapping member's init container restores
// exactly that object (a periodic backup taken meanwhile changes nothing). The cluster
// has no owner reference to the restore: deleting the EtcdRestore never deletes it.
type EtcdRestoreReconciler struct {
	client.Client
	// APIReader reads Secrets and conflicting clusters uncached.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// OperatorImage is the image of the restore init container (this operator's image).
	OperatorImage string
}

// SetupWithManager watches EtcdRestores, the EtcdClusters they create (a cluster
// becoming Available completes its restore) and those clusters' member pods (a failing
// restore init container is reported).
func (r *EtcdRestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.OperatorImage == "" {
		r.OperatorImage = DefaultOperatorImage
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdRestore{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&etcdv1beta2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(restoreOfCluster)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.restoreOfPod)).
		Complete(r)
}

// restoreOfPod maps a member pod with a restore init container to its cluster's restore.
func (r *EtcdRestoreReconciler) restoreOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*corev1.Pod)
	if !ok || p.Labels[render.LabelCluster] == "" || len(p.Spec.InitContainers) == 0 {
		return nil
	}
	var c etcdv1beta2.EtcdCluster
	if err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Labels[render.LabelCluster]}, &c); err != nil {
		return nil
	}
	return restoreOfCluster(ctx, &c)
}

// restoreOfCluster maps a cluster to the EtcdRestore that created it, if any.
func restoreOfCluster(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*etcdv1beta2.EtcdCluster)
	if !ok {
		return nil
	}
	src, _, err := render.Restore(c)
	if err != nil || src == nil || src.Restore == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: src.Restore}}}
}

// Reconcile creates the cluster once and reports until it is Available.
func (r *EtcdRestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var er etcdv1beta2.EtcdRestore
	if err := r.Get(ctx, req.NamespacedName, &er); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !er.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	cond := meta.FindStatusCondition(er.Status.Conditions, RestoreConditionSucceeded)
	if cond != nil && cond.ObservedGeneration == er.Generation {
		// Finished (either way) for this spec: a refused restore is not retried behind
		// the user's back, e.g. after the conflicting cluster is deleted; a spec change
		// starts over.
		if cond.Status == metav1.ConditionTrue || (cond.Status == metav1.ConditionFalse && terminalRestoreReason(cond.Reason)) {
			return ctrl.Result{}, nil
		}
	}
	if reason, msg := checkRestoreSpec(&er); reason != "" {
		return ctrl.Result{}, r.setStatus(ctx, &er, metav1.ConditionFalse, reason, msg)
	}

	name := er.Spec.EtcdCluster.Name
	var existing etcdv1beta2.EtcdCluster
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: name}, &existing)
	switch {
	case err == nil:
		return r.followCluster(ctx, &er, &existing)
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}

	c, err := r.newCluster(ctx, &er)
	if err != nil {
		var be *backupError
		if !errors.As(err, &be) {
			be = &backupError{reason: ReasonStorageError, err: err}
		}
		log.FromContext(ctx).Info("restore not started", "reason", be.reason, "error", be.err.Error())
		if terminalRestoreReason(be.reason) {
			return ctrl.Result{}, r.setStatus(ctx, &er, metav1.ConditionFalse, be.reason, be.err.Error())
		}
		return ctrl.Result{RequeueAfter: restoreRetry}, r.setStatus(ctx, &er, metav1.ConditionFalse, be.reason, be.err.Error())
	}
	if err := r.Create(ctx, c); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created meanwhile (by us before a restart, or by someone else): look again.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, fmt.Errorf("create EtcdCluster %s: %w", name, err)
	}
	src, _, _ := render.Restore(c)
	msg := fmt.Sprintf("created EtcdCluster %s (size %d, etcd %s) from backup s3://%s (sha256 %s); waiting for it to become Available",
		name, c.Spec.Size, c.Spec.Version, src.S3.Path, orNone(src.SHA256))
	r.Recorder.Event(&er, corev1.EventTypeNormal, "ClusterCreated", msg)
	return ctrl.Result{}, r.setStatus(ctx, &er, metav1.ConditionUnknown, ReasonRestoring, msg)
}

// followCluster handles an existing cluster of the restore's name: refuse if it is not
// ours, else report its progress.
func (r *EtcdRestoreReconciler) followCluster(ctx context.Context, er *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) (ctrl.Result, error) {
	src, _, _ := render.Restore(c)
	if src == nil || src.UID != string(er.UID) || src.Restore != er.Name {
		msg := fmt.Sprintf("EtcdCluster %s already exists and was not created by this restore; nothing was changed. "+
			"Restore into a new name (spec.etcdCluster.name), or delete that cluster yourself first", c.Name)
		return ctrl.Result{}, r.setStatus(ctx, er, metav1.ConditionFalse, ReasonClusterExists, msg)
	}
	if clusterAvailable(c) {
		msg := fmt.Sprintf("EtcdCluster %s restored from s3://%s is Available", c.Name, src.S3.Path)
		r.Recorder.Event(er, corev1.EventTypeNormal, ReasonRestoreComplete, msg)
		return ctrl.Result{}, r.setStatus(ctx, er, metav1.ConditionTrue, ReasonRestoreComplete, msg)
	}
	failure, err := r.restoreStepFailure(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if failure != "" {
		// Not final: the kubelet retries the init container, which may yet succeed
		// (e.g. once the store is reachable again).
		return ctrl.Result{}, r.setStatus(ctx, er, metav1.ConditionFalse, ReasonRestoreStepFailed, failure)
	}
	msg := fmt.Sprintf("EtcdCluster %s created from backup s3://%s; waiting for it to become Available (phase %q)", c.Name, src.S3.Path, c.Status.Phase)
	return ctrl.Result{}, r.setStatus(ctx, er, metav1.ConditionUnknown, ReasonRestoring, msg)
}

// restoreStepFailure describes the first member pod (by name) whose restore init
// container last exited with an error, or returns "".
func (r *EtcdRestoreReconciler) restoreStepFailure(ctx context.Context, c *etcdv1beta2.EtcdCluster) (string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return "", err
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range pods.Items {
		for _, st := range p.Status.InitContainerStatuses {
			if st.Name != render.RestoreContainerName {
				continue
			}
			// The current state decides once the container has exited (a success after
			// failed attempts still lists the last failure); while it waits or runs
			// again, the previous attempt tells.
			term := st.State.Terminated
			if term == nil {
				term = st.LastTerminationState.Terminated
			}
			if term == nil || term.ExitCode == 0 {
				continue
			}
			msg := fmt.Sprintf("the restore step of member %s failed (exit code %d); see kubectl logs %s -c %s", p.Name, term.ExitCode, p.Name, render.RestoreContainerName)
			if m := lastLine(term.Message); m != "" {
				msg += ": " + m
			}
			return msg, nil
		}
	}
	return "", nil
}

// lastLine is the last non-empty line of a termination message (the chart asks for the
// log tail on error), cut to a length fit for a condition message.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 512 {
		l = l[:512] + "..."
	}
	return l
}

func clusterAvailable(c *etcdv1beta2.EtcdCluster) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionAvailable {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// terminalRestoreReason: no retry can fix these without a spec change.
func terminalRestoreReason(reason string) bool {
	switch reason {
	case ReasonClusterExists, ReasonUnsupportedStorageType, ReasonBackupInvalidSpec:
		return true
	}
	return false
}

// checkRestoreSpec finds what no retry can fix.
func checkRestoreSpec(er *etcdv1beta2.EtcdRestore) (reason, msg string) {
	s := &er.Spec
	switch s.BackupStorageType {
	case etcdv1beta2.BackupStorageTypeS3:
		if reason, msg := checkS3Source(s.S3, "backupStorageType"); reason != "" {
			return reason, msg
		}
	case etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeOSS:
		return unsupportedProvider(s.BackupStorageType)
	case etcdv1beta2.BackupStorageTypePVC:
		return ReasonUnsupportedStorageType, "restoring from storage type PVC is not implemented yet; use S3"
	default:
		return ReasonUnsupportedStorageType, fmt.Sprintf("unknown storage type %q", s.BackupStorageType)
	}
	if s.EtcdCluster.Name == "" {
		return ReasonBackupInvalidSpec, "spec.etcdCluster.name is empty"
	}
	if _, err := restoreClusterSpec(er); err != nil {
		return ReasonBackupInvalidSpec, err.Error()
	}
	return "", ""
}

// restoreClusterSpec is the spec annotation, or an empty spec.
func restoreClusterSpec(er *etcdv1beta2.EtcdRestore) (etcdv1beta2.EtcdClusterSpec, error) {
	var spec etcdv1beta2.EtcdClusterSpec
	raw, ok := er.Annotations[RestoreClusterSpecAnnotation]
	if !ok {
		return spec, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("annotation %s: not an EtcdCluster spec: %w", RestoreClusterSpecAnnotation, err)
	}
	return spec, nil
}

// newCluster resolves the backup and builds the EtcdCluster to create.
func (r *EtcdRestoreReconciler) newCluster(ctx context.Context, er *etcdv1beta2.EtcdRestore) (*etcdv1beta2.EtcdCluster, error) {
	s3 := er.Spec.S3
	bucket, key, err := backup.SplitS3Path(s3.Path)
	if err != nil {
		return nil, &backupError{ReasonBackupInvalidSpec, err}
	}
	store, err := newS3Store(ctx, r.APIReader, er.Namespace, s3, bucket)
	if err != nil {
		return nil, err
	}
	obj, err := resolveBackup(ctx, store, key)
	if err != nil {
		return nil, err
	}
	spec, err := restoreClusterSpec(er)
	if err != nil {
		return nil, &backupError{ReasonBackupInvalidSpec, err}
	}
	if spec.Size == 0 {
		spec.Size = DefaultRestoreSize
	}
	if spec.Version == "" {
		// A snapshot restores into the etcd version that wrote it (or a later one);
		// our backups record it.
		spec.Version = etcdv1beta2.DefaultVersion
		if v := render.NormalizeVersion(obj.Metadata["etcd-version"]); v != "" {
			spec.Version = v
		}
	}
	pinned := *s3
	pinned.Path = bucket + "/" + obj.Key
	ann, err := render.RestoreSource{Restore: er.Name, UID: string(er.UID), S3: &pinned, SHA256: obj.SHA256}.Annotations(r.OperatorImage)
	if err != nil {
		return nil, &backupError{ReasonBackupInvalidSpec, err}
	}
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: er.Spec.EtcdCluster.Name, Namespace: er.Namespace, Annotations: ann},
		Spec:       spec,
	}
	// Refuse here what the renderer would refuse later, with the restore's own status.
	if err := render.ValidateCluster(c); err != nil {
		return nil, &backupError{ReasonBackupInvalidSpec, err}
	}
	return c, nil
}

// resolveBackup finds the object to restore: key itself if it exists, else the newest
// periodic backup of key, and verifies it. The returned Object carries the stored
// SHA-256 and metadata.
func resolveBackup(ctx context.Context, store backup.Store, key string) (backup.Object, error) {
	rc, obj, err := store.Get(ctx, key)
	if err == nil {
		return verifyBackup(store, rc, obj)
	}
	if !errors.Is(err, backup.ErrNotFound) {
		return obj, &backupError{storageReason(err), err}
	}
	latest, lerr := backup.Latest(ctx, store, key)
	if lerr != nil {
		if errors.Is(lerr, backup.ErrNotFound) {
			return obj, &backupError{ReasonBackupNotFound, fmt.Errorf("%s: no backup %q and no periodic backup %s_v<revision>_<time>", store, key, key)}
		}
		return obj, &backupError{storageReason(lerr), lerr}
	}
	rc, obj, err = store.Get(ctx, latest.Key)
	if err != nil {
		return obj, &backupError{storageReason(err), err}
	}
	return verifyBackup(store, rc, obj)
}

// verifyBackup reads the object to its end: the store's reader checks the stored
// SHA-256 (and gzip framing) on the way, in constant memory.
func verifyBackup(store backup.Store, rc io.ReadCloser, obj backup.Object) (backup.Object, error) {
	defer rc.Close()
	if _, err := io.Copy(io.Discard, rc); err != nil {
		if errors.Is(err, backup.ErrChecksumMismatch) {
			return obj, &backupError{ReasonChecksumMismatch, err}
		}
		return obj, &backupError{storageReason(err), fmt.Errorf("read %s/%s: %w", store, obj.Key, err)}
	}
	return obj, nil
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

// setStatus writes the CoreOS fields and the condition, and a Warning event for a
// failure the first time it is reported.
func (r *EtcdRestoreReconciler) setStatus(ctx context.Context, er *etcdv1beta2.EtcdRestore, status metav1.ConditionStatus, reason, msg string) error {
	orig := er.DeepCopy()
	er.Status.Succeeded = status == metav1.ConditionTrue
	er.Status.Reason = ""
	if status == metav1.ConditionFalse {
		er.Status.Reason = msg
	}
	changed := meta.SetStatusCondition(&er.Status.Conditions, metav1.Condition{
		Type: RestoreConditionSucceeded, Status: status, Reason: reason, Message: msg, ObservedGeneration: er.Generation,
	})
	if !changed && orig.Status.Succeeded == er.Status.Succeeded && orig.Status.Reason == er.Status.Reason {
		return nil
	}
	if err := r.Status().Patch(ctx, er, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	if status == metav1.ConditionFalse {
		r.Recorder.Event(er, corev1.EventTypeWarning, reason, msg)
	}
	return nil
}
