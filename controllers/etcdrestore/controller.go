// Package etcdrestore is the EtcdRestore controller: it creates a new EtcdCluster from a
// backup that passed its snapshot check, optionally replacing an existing one, and reports until the cluster
// is Available.
package etcdrestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/pinkey"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// RestoreClusterSpecAnnotation on an EtcdRestore holds, as JSON, an EtcdClusterSpec for
// the cluster to create (size, version, repository, pod policy, TLS...). CoreOS's
// EtcdRestore names only the cluster: CoreOS copied the spec of the cluster it deleted,
// which this operator never does. Without the annotation the new cluster has
// DefaultRestoreSize members and the etcd version recorded with the backup (else
// v1beta2.DefaultVersion).
const RestoreClusterSpecAnnotation = "etcd.database.coreos.com/restore-cluster-spec"

// ReplaceExistingClusterAnnotation, set to "true" on an EtcdRestore, allows it to delete
// an existing EtcdCluster of the name spec.etcdCluster.name and recreate it from the
// backup (what CoreOS's operator always did). Without it a taken name is refused with
// etcdv1beta2.ReasonClusterExists. The old cluster is deleted only after the backup is resolved
// and checked as the restore step will check it (its SHA-256 if it has one, and in
// every case etcd's integrity hash and a readable bbolt database: in a snapshot check
// pod, check.go) and the object's key and SHA-256 are recorded in
// CheckedObjectAnnotation, so a restore that cannot succeed destroys nothing and the
// new cluster restores exactly the object checked; deletion uses
// foreground propagation and the new cluster is created only once the old one and its
// member pods are gone. Backups on a PVC cannot be checked by the operator beforehand
// and are therefore refused for replacement (etcdv1beta2.ReasonBackupInvalidSpec).
const ReplaceExistingClusterAnnotation = "etcd.database.coreos.com/replace-existing-cluster"

// ReplacedClusterAnnotation is written by the operator on an EtcdRestore, before it
// deletes a cluster to replace it: {"name": ..., "uid": ...} of that cluster, so what
// was deleted stays on record (also in events and in every later status message) even
// if the operator restarts in between.
const ReplacedClusterAnnotation = "etcd.database.coreos.com/replaced-cluster"

// ReplacedClusterSignatureAnnotation is the operator's signature of
// ReplacedClusterAnnotation for this restore (internal/pinsign): the new cluster's auth
// is taken only from a record it verifies, as anyone who may write EtcdRestores can
// write the record.
const ReplacedClusterSignatureAnnotation = "etcd.database.coreos.com/replaced-cluster-signature"

// Workers is how many EtcdRestores are reconciled at once (as many as the other
// controllers have).
const Workers = 4

// DefaultRestoreSize is the size of a restored cluster unless the spec annotation says
// otherwise.
const DefaultRestoreSize = 3

// replacePoll is how often a replacement checks whether the old cluster and its pods
// are gone (the deletion of a cluster we did not create enqueues nothing).
const replacePoll = 2 * time.Second

// restoreRetry is the delay before a failed lookup of the backup (a store that is down,
// a secret not created yet) is tried again.
const restoreRetry = 15 * time.Second

// Reconciler creates a new EtcdCluster from a backup. It never changes an
// existing cluster: if the name is taken by a cluster it did not create, the restore is
// refused with etcdv1beta2.ReasonClusterExists and nothing is touched (CoreOS deleted that cluster
// and recreated it), unless the EtcdRestore carries ReplaceExistingClusterAnnotation.
//
// An S3 backup is resolved here, once: spec.s3.path is an exact object if one exists at
// that key, else the prefix of periodic backups (<path>_v<rev>_<time>) whose newest is
// taken. The object is checked exactly as the members' restore step will check it, in a
// snapshot check pod of the operator's image (never in the operator's process; see
// check.go), before anything is created or deleted, so a corrupted backup fails here
// (etcdv1beta2.ReasonChecksumMismatch, etcdv1beta2.ReasonInvalidSnapshot) rather than in
// crash-looping member pods. The chosen object and its SHA-256 (as the operator read it
// itself, and equal to the check's) are recorded on the EtcdRestore and written into the new cluster's
// render.AnnotationRestore, so every bootstrapping member's init container restores
// exactly that object (a periodic backup taken meanwhile changes nothing). The cluster
// has no owner reference to the restore: deleting the EtcdRestore never deletes it.
//
// A PVC backup (spec.pvc) is not read here: the operator cannot mount claims. The
// bootstrapping members' init containers mount the claim read-only and restore
// exactly spec.pvc.path (no periodic prefix: members picking "the newest" on their own
// could restore different snapshots); each verifies the file against its SHA-256
// sidecar and fails on a mismatch, which the restore reports as
// etcdv1beta2.ReasonRestoreStepFailed. The new cluster gets v1beta2.DefaultVersion unless the spec
// annotation names the backup's version.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets and conflicting clusters uncached.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// OperatorImage is the image of the restore init container (this operator's image).
	OperatorImage string
	// S3Access is what the operator lends to reach S3 (--allow-ambient-s3-credentials).
	S3Access backupstorage.S3Access
	// Hasher reads a checked object's SHA-256 apart from the workers (nil: one of the
	// package's own).
	Hasher *snapshotcheck.Hasher
	// PinKey signs the replaced-cluster record (internal/pinkey). Without it a cluster
	// with etcd auth is not replaced: its auth could not be carried to the new cluster.
	PinKey []byte
	// ShardKey is the fleet's --shard-key ("" when not sharded): a replaced cluster's
	// annotation of that key is carried to the new one, keeping it on its shard
	// (replace_meta.go).
	ShardKey string

	// lookups finds the restores' objects apart from the workers (lookup.go).
	lookups lookups
}

// SetupWithManager watches EtcdRestores, the EtcdClusters they create (a cluster
// becoming Available completes its restore) and those clusters' member pods (a failing
// restore init container is reported).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.OperatorImage = operatorimage.Or(r.OperatorImage)
	if r.Hasher == nil {
		r.Hasher = &snapshotcheck.Hasher{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdRestore{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&etcdv1beta2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(restoreOfCluster)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.restoreOfPod)).
		// A restore's slow I/O (its backup's SHA-256) runs apart from the workers
		// (snapshotcheck.Hasher); several workers still keep one tenant's API calls
		// from delaying every other namespace's.
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		Complete(r)
}

// restoreOfPod maps a restore's snapshot check pod to that restore, and a member pod
// with a restore init container to its cluster's restore.
func (r *Reconciler) restoreOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	if _, check := p.Labels[render.LabelSnapshotCheck]; check {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "EtcdRestore" && ref.APIVersion == etcdv1beta2.GroupVersion.String() {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}}}
		}
		return nil
	}
	if p.Labels[render.LabelCluster] == "" || len(p.Spec.InitContainers) == 0 {
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
	src, err := render.Restore(c)
	if err != nil || src == nil || src.Restore == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: src.Restore}}}
}

// Reconcile creates the cluster once and reports until it is Available. The status is
// written once, when the reconcile ends (status.go): each step only sets what it reports.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var er etcdv1beta2.EtcdRestore
	if err := r.Get(ctx, req.NamespacedName, &er); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: nothing of it is kept.
			r.lookups.forgetRestore(req.String())
			r.hasher().ForgetPrefix(hashIDPrefix(req.Namespace, req.Name))
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !er.DeletionTimestamp.IsZero() {
		r.lookups.forgetRestore(req.String())
		return ctrl.Result{}, r.settleRootSecret(ctx, &er) // replace_auth.go
	}
	before := er.Status.DeepCopy()
	defer func() {
		if ferr := r.flushStatus(ctx, &er, before); err == nil {
			err = ferr
		}
	}()
	res, err := r.reconcile(ctx, &er)
	if err == nil {
		err = r.settleRootSecret(ctx, &er) // replace_auth.go
	}
	return res, err
}

// reconcile is one pass over er; what it reports is set on er.Status (setStatus) and
// written by Reconcile.
func (r *Reconciler) reconcile(ctx context.Context, er *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	cond := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
	if cond != nil && cond.ObservedGeneration == er.Generation {
		// Finished (either way) for this spec: a refused restore is not retried behind
		// the user's back, e.g. after the conflicting cluster is deleted; a spec change
		// starts over.
		// Adding the replace annotation after a ClusterExists refusal is the one
		// change that resumes without a spec change.
		retryReplace := cond.Reason == etcdv1beta2.ReasonClusterExists && replaceRequested(er)
		if cond.Status == metav1.ConditionTrue || (cond.Status == metav1.ConditionFalse && terminalRestoreReason(cond.Reason) && !retryReplace) {
			return ctrl.Result{}, nil
		}
	}
	if reason, msg := checkRestoreSpec(er); reason != "" {
		r.setStatus(er, metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, nil
	}

	name := er.Spec.EtcdCluster.Name
	var existing etcdv1beta2.EtcdCluster
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: name}, &existing)
	switch {
	case err == nil:
		if !r.originOK(&existing, er) {
			if replaceRequested(er) {
				return r.replaceCluster(ctx, er, &existing)
			}
		} else if err := r.handOverRootSecret(ctx, er, &existing); err != nil { // replace_auth.go
			return ctrl.Result{}, err
		}
		return r.followCluster(ctx, er, &existing)
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}

	// Member pods of an earlier cluster of this name (one being replaced, or deleted
	// by someone just before) may still be terminating: new members must not meet them.
	if n, err := r.leftoverPods(ctx, er.Namespace, name); err != nil {
		return ctrl.Result{}, err
	} else if n > 0 {
		msg := fmt.Sprintf("waiting for %d pod(s) of an earlier EtcdCluster %s to be gone before creating it from the backup.%s", n, name, replacedNote(er))
		r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, msg)
		return ctrl.Result{RequeueAfter: replacePoll}, nil
	}

	auth, err := r.trustedAuth(er) // replace_auth.go
	if err != nil {
		r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}
	c, err := r.newCluster(ctx, er, auth, r.recordedMeta(er))
	if p, ok := errors.AsType[*checkPending](err); ok {
		if failedBefore(er) {
			return ctrl.Result{RequeueAfter: p.after}, nil // checked again; the failure stands until it passes
		}
		msg := fmt.Sprintf("%s; EtcdCluster %s is created once the backup is verified.%s", p.msg, name, replacedNote(er))
		r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, msg)
		return ctrl.Result{RequeueAfter: p.after}, nil
	}
	if err != nil {
		return r.backupFailed(ctx, er, err)
	}
	if err := r.Create(ctx, c); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created meanwhile (by us before a restart, or by someone else): look again.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		if refusedByAPIServer(err) {
			r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, clusterRefusedMessage(name, err))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("create EtcdCluster %s: %w", name, err)
	}
	if err := r.recordCreated(ctx, er, c); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.handOverRootSecret(ctx, er, c); err != nil {
		return ctrl.Result{}, err
	}
	src, _ := render.Restore(c)
	msg := fmt.Sprintf("created EtcdCluster %s (size %d, etcd %s) from backup %s (sha256 %s); waiting for it to become Available.%s",
		name, c.Spec.Size, c.Spec.Version, src.Location(), orNone(src.SHA256), replacedNote(er))
	r.Recorder.Event(er, corev1.EventTypeNormal, etcdv1beta2.EventReasonClusterCreated, msg)
	r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, msg)
	return ctrl.Result{}, nil
}

// backupFailed reports a backup that could not be resolved or verified; nothing was
// created or deleted. Transient failures are retried.
func (r *Reconciler) backupFailed(ctx context.Context, er *etcdv1beta2.EtcdRestore, err error) (ctrl.Result, error) {
	var be *backupstorage.Error
	if !errors.As(err, &be) {
		be = &backupstorage.Error{Reason: etcdv1beta2.ReasonStorageError, Err: err}
	}
	log.FromContext(ctx).Info("restore not started", "reason", be.Reason, "error", be.Err.Error())
	if terminalRestoreReason(be.Reason) {
		r.setStatus(er, metav1.ConditionFalse, be.Reason, be.Err.Error())
		return ctrl.Result{}, nil
	}
	r.setStatus(er, metav1.ConditionFalse, be.Reason, be.Err.Error())
	return ctrl.Result{RequeueAfter: restoreRetry}, nil
}

// failedBefore: the restore's backup failed for this spec (not the ClusterExists refusal
// a replace annotation resumes from). A retry's check pod then runs without turning the
// condition back to Unknown, so the failure stays readable until a check passes.
func failedBefore(er *etcdv1beta2.EtcdRestore) bool {
	c := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == er.Generation && c.Reason != etcdv1beta2.ReasonClusterExists
}

// replaceRequested: the EtcdRestore opted into replacing an existing cluster.
func replaceRequested(er *etcdv1beta2.EtcdRestore) bool {
	return strings.EqualFold(strings.TrimSpace(er.Annotations[ReplaceExistingClusterAnnotation]), "true")
}

// replacedCluster is the value of ReplacedClusterAnnotation.
type replacedCluster struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Auth are the replaced cluster's etcd auth annotations, given to the new cluster
	// (replace_auth.go).
	Auth map[string]string `json:"auth,omitempty"`
	// RootSecret is the operator's root Secret kept from the replaced cluster.
	RootSecret string `json:"rootSecret,omitempty"`
	// Meta are the replaced cluster's labels and instance-choosing annotations, given to
	// the new cluster (replace_meta.go).
	Meta carriedMeta `json:"meta,omitzero"`
}

// replacedNote is a sentence for status messages naming the cluster this restore
// deleted, or "".
func replacedNote(er *etcdv1beta2.EtcdRestore) string {
	raw, ok := er.Annotations[ReplacedClusterAnnotation]
	if !ok {
		return ""
	}
	var rc replacedCluster
	if err := json.Unmarshal([]byte(raw), &rc); err != nil {
		return fmt.Sprintf(" This restore deleted an earlier cluster: %s", raw)
	}
	return fmt.Sprintf(" This restore deleted the earlier EtcdCluster %s (uid %s) to replace it.", rc.Name, rc.UID)
}

// replaceCluster deletes an existing cluster the restore was told to replace, once the
// backup is known good, and waits for it to be gone; Reconcile then creates the new one.
func (r *Reconciler) replaceCluster(ctx context.Context, er *etcdv1beta2.EtcdRestore, old *etcdv1beta2.EtcdCluster) (ctrl.Result, error) {
	if er.Spec.BackupStorageType == etcdv1beta2.BackupStorageTypePVC {
		msg := fmt.Sprintf("EtcdCluster %s exists and %s=true asks to replace it, but a backup on a PVC can only be verified by the new "+
			"members, after the old cluster would be gone; nothing was changed. Restore into a new name, or from S3", old.Name, ReplaceExistingClusterAnnotation)
		r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, msg)
		return ctrl.Result{}, nil
	}
	if !old.DeletionTimestamp.IsZero() {
		// Being deleted (by us, or by someone else meanwhile): the backup was checked
		// before our delete; it is checked again when the new cluster is created.
		msg := fmt.Sprintf("EtcdCluster %s (uid %s) is being deleted; the restore creates it anew once it and its pods are gone.%s", old.Name, old.UID, replacedNote(er))
		r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, msg)
		return ctrl.Result{RequeueAfter: replacePoll}, nil
	}
	// The old cluster's etcd auth goes to the new one (replace_auth.go), through a
	// record only the operator can sign.
	carried := authCarried(old)
	if carried != nil && len(r.PinKey) == 0 {
		msg := fmt.Sprintf("EtcdCluster %s has etcd authentication on, and the operator has no signing key (Secret %s in its namespace, see its log) "+
			"to carry it to the new cluster, which would be locked out of the restored data; nothing was changed", old.Name, pinkey.SecretName)
		r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, msg)
		return ctrl.Result{}, nil
	}
	// Resolve and check the backup first, and build the new cluster with the carried
	// auth: a restore that cannot succeed must not destroy the cluster it would replace.
	meta := metaCarried(old, r.ShardKey) // replace_meta.go
	c, err := r.newCluster(ctx, er, carried, meta)
	if p, ok := errors.AsType[*checkPending](err); ok {
		if failedBefore(er) {
			return ctrl.Result{RequeueAfter: p.after}, nil // checked again; the failure stands until it passes
		}
		msg := fmt.Sprintf("%s; EtcdCluster %s (uid %s) is replaced only once the backup is verified, and is not touched until then", p.msg, old.Name, old.UID)
		r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, msg)
		return ctrl.Result{RequeueAfter: p.after}, nil
	}
	if err != nil {
		return r.backupFailed(ctx, er, untouched(err, old))
	}
	// The API server judges the new cluster before the old one is deleted (a dry run:
	// admission runs before the store finds the name taken), so a cluster it would refuse
	// (its schema, an admission policy such as a shard guard that does not exempt the
	// operator) does not cost the one it would replace.
	switch err := r.Create(ctx, c.DeepCopy(), client.DryRunAll); {
	case err == nil || apierrors.IsAlreadyExists(err):
	case refusedByAPIServer(err):
		r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec,
			clusterRefusedMessage(c.Name, err)+"; "+notTouched(old))
		return ctrl.Result{}, nil
	default:
		return ctrl.Result{}, fmt.Errorf("dry-run create of EtcdCluster %s: %w", c.Name, err)
	}
	src, _ := render.Restore(c)
	// On record before the delete, so it survives an operator restart right after it;
	// with it the old cluster's auth, and its root Secret is kept (replace_auth.go).
	rootSecret, err := r.keepRootSecret(ctx, er, old, carried)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rootSecret != "" && !controllerutil.ContainsFinalizer(er, RootSecretFinalizer) {
		if err := r.setFinalizer(ctx, er, true); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer %s to EtcdRestore %s: %w", RootSecretFinalizer, er.Name, err)
		}
	}
	rec, _ := json.Marshal(replacedCluster{Name: old.Name, UID: string(old.UID), Auth: carried, RootSecret: rootSecret, Meta: meta})
	sig := pinsign.SignReplaced(r.PinKey, string(er.UID), string(rec))
	if er.Annotations[ReplacedClusterAnnotation] != string(rec) || er.Annotations[ReplacedClusterSignatureAnnotation] != sig {
		if err := r.setAnnotations(ctx, er, map[string]string{ReplacedClusterAnnotation: string(rec), ReplacedClusterSignatureAnnotation: sig}); err != nil {
			return ctrl.Result{}, fmt.Errorf("record the cluster to replace on EtcdRestore %s: %w", er.Name, err)
		}
	}
	uid := old.UID
	err = r.Delete(ctx, old, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationForeground))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone or replaced by someone else meanwhile: look again.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("delete EtcdCluster %s (uid %s): %w", old.Name, old.UID, err)
	}
	msg := fmt.Sprintf("deleting EtcdCluster %s (uid %s, as %s=true asks) to recreate it from the verified backup %s (sha256 %s); "+
		"waiting for it and its pods to be gone", old.Name, old.UID, ReplaceExistingClusterAnnotation, src.Location(), orNone(src.SHA256))
	log.FromContext(ctx).Info("replacing cluster", "cluster", old.Name, "uid", old.UID, "backup", src.Location())
	r.Recorder.Event(er, corev1.EventTypeWarning, etcdv1beta2.EventReasonDeletedCluster, msg)
	r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, msg)
	return ctrl.Result{RequeueAfter: replacePoll}, nil
}

// untouched adds to a failure before a replacement that the cluster was not touched.
func untouched(err error, old *etcdv1beta2.EtcdCluster) error {
	var be *backupstorage.Error
	if !errors.As(err, &be) {
		be = &backupstorage.Error{Reason: etcdv1beta2.ReasonStorageError, Err: err}
	}
	return &backupstorage.Error{Reason: be.Reason, Err: fmt.Errorf("%w; %s", be.Err, notTouched(old))}
}

// notTouched says that a restore stopped before it changed the cluster it would replace.
func notTouched(old *etcdv1beta2.EtcdCluster) string {
	return fmt.Sprintf("EtcdCluster %s (uid %s) was not touched", old.Name, old.UID)
}

// createdBy: the cluster's restore annotation is what er writes when it creates it (the
// same check the cluster controller makes before it restores): a cluster annotated by
// anyone else is not the restore's to follow.
func createdBy(c *etcdv1beta2.EtcdCluster, er *etcdv1beta2.EtcdRestore) bool {
	src, err := render.Restore(c)
	return err == nil && src != nil && restoreorigin.Check(er, c.Name, src) == nil
}

// leftoverPods counts member pods of a cluster name that does not exist (uncached: a
// stale cache must not let the new members start beside old ones).
func (r *Reconciler) leftoverPods(ctx context.Context, ns, name string) (int, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: render.ClusterSelector(name)}); err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}

// followCluster handles an existing cluster of the restore's name: refuse if it is not
// ours, else report its progress.
func (r *Reconciler) followCluster(ctx context.Context, er *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) (ctrl.Result, error) {
	if !r.originOK(c, er) {
		msg := fmt.Sprintf("EtcdCluster %s already exists and was not created by this restore; nothing was changed. "+
			"Restore into a new name (spec.etcdCluster.name), delete that cluster yourself first, "+
			"or annotate this EtcdRestore with %s=true to have it replaced", c.Name, ReplaceExistingClusterAnnotation)
		r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonClusterExists, msg)
		return ctrl.Result{}, nil
	}
	src, _ := render.Restore(c)
	if clusterAvailable(c) {
		msg := fmt.Sprintf("EtcdCluster %s restored from %s is Available.%s", c.Name, src.Location(), replacedNote(er))
		r.Recorder.Event(er, corev1.EventTypeNormal, etcdv1beta2.ReasonRestoreComplete, msg)
		r.setStatus(er, metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, msg)
		return ctrl.Result{}, nil
	}
	failure, err := r.restoreStepFailure(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if failure != "" {
		// Not final: the kubelet retries the init container, which may yet succeed
		// (e.g. once the store is reachable again).
		r.setStatus(er, metav1.ConditionFalse, etcdv1beta2.ReasonRestoreStepFailed, failure)
		return ctrl.Result{}, nil
	}
	msg := fmt.Sprintf("EtcdCluster %s created from backup %s; waiting for it to become Available (phase %q).%s", c.Name, src.Location(), c.Status.Phase, replacedNote(er))
	msg += membersCannotStart(c)
	r.setStatus(er, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, msg)
	return ctrl.Result{}, nil
}

// restoreStepFailure describes the first member pod (by name) whose restore init
// container last exited with an error, or returns "".
func (r *Reconciler) restoreStepFailure(ctx context.Context, c *etcdv1beta2.EtcdCluster) (string, error) {
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
			if m := render.LastMessageLine(term.Message); m != "" {
				msg += ": " + m
			}
			return msg, nil
		}
	}
	return "", nil
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
	case etcdv1beta2.ReasonClusterExists, etcdv1beta2.ReasonUnsupportedStorageType, etcdv1beta2.ReasonBackupInvalidSpec:
		return true
	case etcdv1beta2.ReasonS3EndpointRefused, etcdv1beta2.ReasonLimitExceeded:
		// Neither changes without a spec change (or the operator's flags): retrying
		// would download a bomb up to the limit again every time.
		return true
	}
	return false
}

// checkRestoreSpec finds what no retry can fix.
func checkRestoreSpec(er *etcdv1beta2.EtcdRestore) (reason, msg string) {
	s := &er.Spec
	if reason, msg := checkSelection(er); reason != "" {
		return reason, msg
	}
	switch s.BackupStorageType {
	case etcdv1beta2.BackupStorageTypeS3:
		if restoreorigin.BackupRef(er) != "" {
			break // the EtcdBackup's storage, checked when it is read
		}
		if reason, msg := backupstorage.CheckS3Source(s.S3, "backupStorageType"); reason != "" {
			return reason, msg
		}
	case etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeOSS:
		return backupstorage.UnsupportedProvider(s.BackupStorageType)
	case etcdv1beta2.BackupStorageTypePVC:
		if s.PVC == nil || s.PVC.ClaimName == "" {
			return etcdv1beta2.ReasonBackupInvalidSpec, "backupStorageType PVC needs spec.pvc.claimName"
		}
		if _, err := render.CleanBackupPath(s.PVC.Path); err != nil {
			return etcdv1beta2.ReasonBackupInvalidSpec, err.Error()
		}
	default:
		return etcdv1beta2.ReasonUnsupportedStorageType, fmt.Sprintf("unknown storage type %q", s.BackupStorageType)
	}
	if s.EtcdCluster.Name == "" {
		return etcdv1beta2.ReasonBackupInvalidSpec, "spec.etcdCluster.name is empty"
	}
	if _, err := restoreClusterSpec(er); err != nil {
		return etcdv1beta2.ReasonBackupInvalidSpec, err.Error()
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
func (r *Reconciler) newCluster(ctx context.Context, er *etcdv1beta2.EtcdRestore, auth map[string]string, meta carriedMeta) (*etcdv1beta2.EtcdCluster, error) {
	var src render.RestoreSource
	var backupVersion string
	if er.Spec.BackupStorageType == etcdv1beta2.BackupStorageTypePVC {
		// Not readable here; the init containers check it (see the type's comment).
		pvc := *er.Spec.PVC
		src = render.RestoreSource{PVC: &pvc}
	} else {
		// Resolved, then checked in a pod and hashed by the operator (check.go); the
		// members restore exactly the object recorded as checked, pinned to its SHA-256.
		pinned, store, eb, err := r.resolveObject(ctx, er)
		if err != nil {
			return nil, err
		}
		v, err := r.checkedObject(ctx, er, pinned, store)
		if err != nil {
			return nil, err
		}
		src = render.RestoreSource{S3: pinned, SHA256: v.SHA256}
		if eb != nil {
			carryPinSignature(&src, eb) // pin.go
		}
		backupVersion = v.EtcdVersion
	}
	src.Restore, src.UID = er.Name, string(er.UID)
	spec, err := restoreClusterSpec(er)
	if err != nil {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	if spec.Size == 0 {
		spec.Size = DefaultRestoreSize
	}
	if spec.Version == "" {
		// A snapshot restores into the etcd version that wrote it (or a later one);
		// our backups record it.
		spec.Version = etcdv1beta2.DefaultVersion
		if v := render.NormalizeVersion(backupVersion); v != "" {
			spec.Version = v
		}
	}
	ann, err := src.Annotations()
	if err != nil {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: er.Spec.EtcdCluster.Name, Namespace: er.Namespace, Annotations: ann},
		Spec:       spec,
	}
	carryAuth(c, auth) // replace_auth.go
	carryMeta(c, meta) // replace_meta.go
	// Refuse here what the renderer or admission would refuse later, with the
	// restore's own status (and, when replacing, before the old cluster is deleted).
	if err := render.ValidateCluster(c); err != nil {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	if err := etcdv1beta2.ValidateAuth(c); err != nil {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: fmt.Errorf("the replaced cluster's etcd auth, carried to the new one: %w", err)}
	}
	return c, nil
}

// resolveObject names the S3 object to restore and opens its bucket: the one recorded
// as checked for this generation if any (nothing is listed or chosen again), else, for a
// restore naming an EtcdBackup, the one its selection chooses (resolveBackupRef), else
// spec.s3.path itself if an object exists at that key, else the newest periodic backup
// of it. Only the object's metadata is read here, never its data. eb is the EtcdBackup a
// backupRef names, else nil.
func (r *Reconciler) resolveObject(ctx context.Context, er *etcdv1beta2.EtcdRestore) (*etcdv1beta2.S3BackupSource, backup.Store, *etcdv1beta2.EtcdBackup, error) {
	if restoreorigin.BackupRef(er) != "" {
		return r.resolveBackupRef(ctx, er)
	}
	s3 := er.Spec.S3
	bucket, key, err := backup.SplitS3Path(s3.Path)
	if err != nil {
		return nil, nil, nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	store, err := r.S3Access.Open(ctx, r.APIReader, er.Namespace, s3, bucket)
	if err != nil {
		return nil, nil, nil, err
	}
	pinned := *s3
	if v := recordedObject(er, bucket, s3.Endpoint); v != nil {
		pinned.Path = bucket + "/" + v.Key
		return &pinned, store, nil, nil
	}
	// The endpoint is the tenant's: looked up apart from the workers (lookup.go).
	found, err := r.lookups.find(ctx, lookupID(er, s3), sourceOf(s3), func(ctx context.Context) lookupResult {
		return findObject(ctx, store, key)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if found.err != nil {
		return nil, nil, nil, found.err
	}
	pinned.Path = bucket + "/" + found.key
	return &pinned, store, nil, nil
}

// findObject is key if an object exists there, else the newest periodic backup of key.
// Only metadata is read, never the data.
func findObject(ctx context.Context, store backup.Store, key string) lookupResult {
	rc, _, err := store.Get(ctx, key)
	switch {
	case err == nil:
		rc.Close() // it exists; its data is the check pod's to read
		return lookupResult{key: key}
	case errors.Is(err, backup.ErrNotFound):
		latest, lerr := backup.Latest(ctx, store, key)
		if errors.Is(lerr, backup.ErrNotFound) {
			return lookupResult{err: &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupNotFound, Err: fmt.Errorf("%s: no backup %q and no periodic backup %s_v<revision>_<time>", store, key, key)}}
		}
		if lerr != nil {
			return lookupResult{err: &backupstorage.Error{Reason: backupstorage.Reason(lerr), Err: lerr}}
		}
		return lookupResult{key: latest.Key}
	default:
		return lookupResult{err: &backupstorage.Error{Reason: backupstorage.Reason(err), Err: err}}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

// membersCannotStart is a sentence for a restore's status when the restored cluster's
// member pods report failures (e.g. the backup's claim does not exist), or "".
func membersCannotStart(c *etcdv1beta2.EtcdCluster) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type != etcdv1beta2.ClusterConditionPodsHealthy || cond.Status != corev1.ConditionFalse {
			continue
		}
		if cond.Reason == etcdv1beta2.ReasonPodsStarting || cond.Reason == etcdv1beta2.ReasonNoPods {
			return ""
		}
		return fmt.Sprintf(" Its members cannot start (%s): %s", cond.Reason, cond.Message)
	}
	return ""
}

// refusedByAPIServer: the API server judged the object and refused it, by its schema
// (Invalid) or by an admission policy or webhook (Forbidden, which RBAC also answers when
// the operator lacks a right): trying the same object again gets the same answer.
func refusedByAPIServer(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
}

// clusterRefusedMessage explains an EtcdCluster the API server refused to create for a
// restore; a retry cannot succeed without a change to the EtcdRestore.
func clusterRefusedMessage(name string, err error) string {
	return fmt.Sprintf("the API server refused the EtcdCluster %s this restore would create; nothing was created. "+
		"Fix the EtcdRestore (e.g. its %s annotation): %v", name, RestoreClusterSpecAnnotation, err)
}
