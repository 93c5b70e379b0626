package etcdrestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
)

// An S3 backup is checked before anything is created or deleted, but never in the
// operator's process: a snapshot check pod (render.SnapshotCheckPod: the operator's own
// image, bounded CPU, memory, ephemeral storage and time, no token, the restricted
// profile) in the restore's namespace downloads the object and runs the checks a
// member's restore step runs (restore.CheckSnapshot). Its report is the tenant's to
// forge (it runs in their namespace), so the operator acts on none of it but what it
// checks itself: it streams the object through SHA-256 (backup.HashObject: bounded by
// --max-backup-bytes and --backup-hash-timeout, nothing written to disk, nothing parsed;
// on a goroutine apart from the reconcile workers, snapshotcheck.Hasher, so a slow-drip
// endpoint holds none of them) and requires the pod's SHA-256 to equal its own. Only then has the object passed: its key and SHA-256 are
// recorded in CheckedObjectAnnotation before the old cluster is deleted (replace) or
// the new one created, and every later step restores exactly that object: the new
// cluster's members are pinned to that SHA-256, so an object replaced in the bucket
// after the check fails the restore (ChecksumMismatch in the restore step) instead of
// restoring other data.

// CheckedObjectAnnotation is written by the operator on an EtcdRestore once its object
// passed its snapshot check: {"generation", "bucket", "endpoint", "key", "sha256", "revision",
// "etcdVersion"}. It holds for the restore's generation and that bucket and endpoint
// only; a spec change checks again. Like everything on an EtcdRestore it is the tenant's
// to edit: a forged record only skips the pre-check of the tenant's own restore (the
// members still run every snapshot check against the recorded SHA-256; nothing signed is
// derived from it). The value keeps the name it was released under.
const CheckedObjectAnnotation = "etcd.database.coreos.com/restore-verified-object"

// checkPodSuffix names the pod <restore>-check.
const checkPodSuffix = "check"

// checkedSnapshot is the value of CheckedObjectAnnotation.
type checkedSnapshot struct {
	Generation  int64  `json:"generation"`
	Bucket      string `json:"bucket"`
	Endpoint    string `json:"endpoint,omitempty"`
	Key         string `json:"key"`
	SHA256      string `json:"sha256"`
	Revision    int64  `json:"revision,omitempty"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
}

// recordedObject is the object checked for er's current generation in bucket at
// endpoint, or nil.
func recordedObject(er *etcdv1beta2.EtcdRestore, bucket, endpoint string) *checkedSnapshot {
	raw, ok := er.Annotations[CheckedObjectAnnotation]
	if !ok {
		return nil
	}
	var v checkedSnapshot
	if json.Unmarshal([]byte(raw), &v) != nil || v.Generation != er.Generation || v.Bucket != bucket || v.Endpoint != endpoint ||
		v.Key == "" || len(v.SHA256) != 64 {
		return nil
	}
	return &v
}

// checkPending says the object's check is not finished: a status message and when to
// look again. Not a failure.
type checkPending struct {
	msg   string
	after time.Duration
}

func (p *checkPending) Error() string { return p.msg }

// checkedObject returns the checked record of the object s3 names (an exact
// <bucket>/<key>), running its check pod and hashing the object when it has none: a
// *checkPending while the pod runs, a *backupstorage.Error when the object failed (the
// pod is deleted, nothing else touched).
func (r *Reconciler) checkedObject(ctx context.Context, er *etcdv1beta2.EtcdRestore, s3 *etcdv1beta2.S3BackupSource, store backup.Store) (*checkedSnapshot, error) {
	bucket, key, err := backup.SplitS3Path(s3.Path)
	if err != nil {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	if v := recordedObject(er, bucket, s3.Endpoint); v != nil && v.Key == key {
		return v, nil
	}
	spec := r.checkSpec(er, s3)
	var pod corev1.Pod
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: spec.Name}, &pod)
	if apierrors.IsNotFound(err) {
		return nil, r.startCheck(ctx, er, spec)
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(&pod, er) {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonVerificationFailed,
			Err: fmt.Errorf("pod %s/%s exists and is not this restore's snapshot check; the check starts once it is gone", pod.Namespace, pod.Name)}
	}
	if pod.DeletionTimestamp != nil {
		return nil, &checkPending{msg: fmt.Sprintf("waiting for the earlier snapshot check pod %s to be gone", pod.Name), after: time.Second}
	}
	if !snapshotcheck.Is(&pod, spec) {
		// Of another object (an earlier spec, another periodic backup) or not as the
		// operator rendered it: never read; a new one is started.
		if err := r.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		return nil, &checkPending{msg: fmt.Sprintf("replacing the snapshot check pod %s, which does not check %s", pod.Name, sourceOf(s3)), after: time.Second}
	}
	now := time.Now()
	deadline := snapshotcheck.Deadline(&pod, spec)
	res, done := snapshotcheck.Outcome(&pod, !now.Before(deadline))
	if !done {
		return nil, &checkPending{after: deadline.Sub(now),
			msg: fmt.Sprintf("checking backup %s in pod %s (the operator's image; gives up at %s)", sourceOf(s3), pod.Name, deadline.UTC().Format(time.RFC3339))}
	}
	v, err := r.judge(ctx, er, s3, store, res, pod.UID)
	if hp, ok := errors.AsType[*snapshotcheck.HashPending](err); ok {
		// The operator's own read runs apart from the workers; the pod stays until it
		// is done.
		return nil, &checkPending{msg: hp.Error(), after: hp.After}
	}
	if v != nil {
		// On record before the pod goes: a failed write reads the pod again.
		if err := r.recordChecked(ctx, er, v); err != nil {
			return nil, err
		}
	}
	if derr := r.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(derr) != nil {
		log.FromContext(ctx).Info("could not delete the snapshot check pod", "pod", pod.Name, "error", derr.Error())
	}
	return v, err
}

// judge turns a finished check into the checked record, or the failure to report
// (Hasher.Confirm: a passed check counts only if the object's SHA-256, as the operator
// reads it now, apart from its workers, is the one the pod reported; a
// *snapshotcheck.HashPending while that read runs).
// The read's id names the check pod: its result pairs with that pod's report only (a
// read left from a pod deleted before its result was taken is never another's).
func (r *Reconciler) judge(ctx context.Context, er *etcdv1beta2.EtcdRestore, s3 *etcdv1beta2.S3BackupSource, store backup.Store, res restore.CheckResult, checkPod types.UID) (*checkedSnapshot, error) {
	bucket, key, _ := backup.SplitS3Path(s3.Path)
	id := hashIDPrefix(er.Namespace, er.Name) + fmt.Sprintf("%s/%d/%s/%s/%s", er.UID, er.Generation, checkPod, s3.Endpoint, s3.Path)
	obj, sum, err := r.hasher().Confirm(ctx, id, store, key, sourceOf(s3), res)
	if err != nil {
		return nil, err
	}
	log.FromContext(ctx).Info("backup verified", "backup", sourceOf(s3), "sha256", sum, "storedChecksum", obj.SHA256 != "", "revision", res.Revision, "keys", res.KeyCount)
	return &checkedSnapshot{Generation: er.Generation, Bucket: bucket, Endpoint: s3.Endpoint, Key: key, SHA256: sum,
		Revision: res.Revision, EtcdVersion: obj.Metadata["etcd-version"]}, nil
}

// hashIDPrefix starts the ids of a restore's reads in the Hasher, which the cluster
// controller shares: "restore:" (no cluster name holds a colon) keeps them apart from a
// cluster's of the same name, the namespace first bounds them per namespace.
func hashIDPrefix(namespace, name string) string {
	return namespace + "/restore:" + name + "/"
}

// recordChecked writes CheckedObjectAnnotation.
func (r *Reconciler) recordChecked(ctx context.Context, er *etcdv1beta2.EtcdRestore, v *checkedSnapshot) error {
	b, _ := json.Marshal(v)
	if er.Annotations[CheckedObjectAnnotation] == string(b) {
		return nil
	}
	if err := r.setAnnotation(ctx, er, CheckedObjectAnnotation, string(b)); err != nil {
		return fmt.Errorf("record the verified object on EtcdRestore %s: %w", er.Name, err)
	}
	return nil
}

// checkSpec is the check pod of s3's object for er.
func (r *Reconciler) checkSpec(er *etcdv1beta2.EtcdRestore, s3 *etcdv1beta2.S3BackupSource) render.SnapshotCheckSpec {
	return snapshotcheck.Spec(render.SnapshotCheckPodName(er.Name, checkPodSuffix), er.Namespace, er.Name, r.OperatorImage, s3, r.S3Access.MaxObjectBytes)
}

// startCheck creates the check pod.
func (r *Reconciler) startCheck(ctx context.Context, er *etcdv1beta2.EtcdRestore, spec render.SnapshotCheckSpec) error {
	pod, err := render.SnapshotCheckPod(spec)
	if err != nil {
		return &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	pod.Annotations = map[string]string{snapshotcheck.AnnotationStarted: time.Now().UTC().Format(time.RFC3339)}
	if err := controllerutil.SetControllerReference(er, pod, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the snapshot check pod: %w", err)
	}
	log.FromContext(ctx).Info("snapshot check pod created", "pod", pod.Name, "backup", sourceOf(spec.S3))
	return &checkPending{after: spec.Deadline + snapshotcheck.DeadlineSlack,
		msg: fmt.Sprintf("checking backup %s in pod %s (the operator's image) before anything is created or deleted", sourceOf(spec.S3), pod.Name)}
}

// defaultHasher reads for a Reconciler built without SetupWithManager or a Hasher.
var defaultHasher snapshotcheck.Hasher

func (r *Reconciler) hasher() *snapshotcheck.Hasher {
	if r.Hasher != nil {
		return r.Hasher
	}
	return &defaultHasher
}

// sourceOf names an S3 object for messages.
func sourceOf(s3 *etcdv1beta2.S3BackupSource) string {
	return render.RestoreSource{S3: s3}.Location()
}
