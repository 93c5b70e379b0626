package etcdrestore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
)

// A restore may name an EtcdBackup of its namespace (restore-backup-ref; v1
// spec.backupRef) instead of an object: it then reads that backup's storage and takes
// one of the objects the backup wrote, chosen by backupselect (restore-newest-before,
// restore-min-revision; v1 spec.select). The chosen object is recorded in
// status.backup before it is downloaded, checked, or anything is created or deleted.

// selectorOf reads the selection annotations; an error names the annotation.
func selectorOf(er *etcdv1beta2.EtcdRestore) (backupselect.Selector, error) {
	var sel backupselect.Selector
	if v, ok := er.Annotations[etcdv1beta2.RestoreNewestBeforeAnnotation]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return sel, fmt.Errorf("annotation %s (v1 spec.select.newestBefore): %q is not an RFC 3339 time such as 2026-12-03T10:00:00Z",
				etcdv1beta2.RestoreNewestBeforeAnnotation, v)
		}
		sel.NewestBefore = t
	}
	if v, ok := er.Annotations[etcdv1beta2.RestoreMinRevisionAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return sel, fmt.Errorf("annotation %s (v1 spec.select.minRevision): %q is not a positive revision", etcdv1beta2.RestoreMinRevisionAnnotation, v)
		}
		sel.MinRevision = n
	}
	return sel, nil
}

// checkSelection finds what no retry can fix in a restore's choice of backup.
func checkSelection(er *etcdv1beta2.EtcdRestore) (reason, msg string) {
	sel, err := selectorOf(er)
	if err != nil {
		return etcdv1beta2.ReasonBackupInvalidSpec, err.Error()
	}
	if restoreorigin.BackupRef(er) == "" {
		if !sel.IsZero() {
			return etcdv1beta2.ReasonBackupInvalidSpec, fmt.Sprintf("a selection (v1 spec.select) chooses among an EtcdBackup's objects: it needs the annotation %s (v1 spec.backupRef)",
				etcdv1beta2.RestoreBackupRefAnnotation)
		}
		return "", ""
	}
	if er.Spec.S3 != nil || er.Spec.PVC != nil {
		return etcdv1beta2.ReasonBackupInvalidSpec, fmt.Sprintf("the annotation %s (v1 spec.backupRef) reads the EtcdBackup's storage and objects: leave out spec.s3 and spec.pvc (an object key)",
			etcdv1beta2.RestoreBackupRefAnnotation)
	}
	if er.Spec.BackupStorageType != etcdv1beta2.BackupStorageTypeS3 {
		return etcdv1beta2.ReasonBackupInvalidSpec, fmt.Sprintf("the annotation %s (v1 spec.backupRef) needs backupStorageType S3", etcdv1beta2.RestoreBackupRefAnnotation)
	}
	return "", ""
}

// referencedBackup reads the EtcdBackup a restore names, from the restore's namespace only.
func (r *Reconciler) referencedBackup(ctx context.Context, er *etcdv1beta2.EtcdRestore) (*etcdv1beta2.EtcdBackup, error) {
	var eb etcdv1beta2.EtcdBackup
	name := restoreorigin.BackupRef(er)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: name}, &eb)
	if apierrors.IsNotFound(err) {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupNotFound, Err: fmt.Errorf("EtcdBackup %s/%s (annotation %s) not found", er.Namespace, name, etcdv1beta2.RestoreBackupRefAnnotation)}
	}
	if err != nil {
		return nil, err
	}
	if eb.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: fmt.Errorf("EtcdBackup %s stores on %s; only S3 backups can be listed and chosen from", name, eb.Spec.StorageType)}
	}
	if reason, msg := backupstorage.CheckS3Source(eb.Spec.S3, "storageType"); reason != "" {
		return nil, &backupstorage.Error{Reason: reason, Err: fmt.Errorf("EtcdBackup %s: %s", name, msg)}
	}
	return &eb, nil
}

// resolveBackupRef chooses the object among the referenced backup's and records it in
// status (unless this generation's checked object is on record: it is kept). It returns
// the S3 source pinned to that object (the backup's Secret, endpoint and addressing), the
// opened bucket and the EtcdBackup as read. The object is checked by checkedObject.
func (r *Reconciler) resolveBackupRef(ctx context.Context, er *etcdv1beta2.EtcdRestore) (*etcdv1beta2.S3BackupSource, backup.Store, *etcdv1beta2.EtcdBackup, error) {
	eb, err := r.referencedBackup(ctx, er)
	if err != nil {
		return nil, nil, nil, err
	}
	bucket, key, err := backup.SplitS3Path(eb.Spec.S3.Path)
	if err != nil {
		return nil, nil, nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonBackupInvalidSpec, Err: err}
	}
	store, err := r.S3Access.OpenFor(ctx, r.APIReader, er.Namespace, eb.Name, eb.Spec.S3, bucket)
	if err != nil {
		return nil, nil, nil, err
	}
	pinned := eb.Spec.S3.DeepCopy()
	if v := recordedObject(er, bucket, eb.Spec.S3.Endpoint); v != nil {
		pinned.Path = bucket + "/" + v.Key
		return pinned, store, eb, nil
	}
	sel, _ := selectorOf(er) // checked by checkSelection
	// The listing and metadata reads run apart from the workers (lookup.go), keyed by
	// the backup as read (its UID and generation) and the selection.
	inputs := struct {
		S3         *etcdv1beta2.S3BackupSource
		UID        string
		Generation int64
		Sel        backupselect.Selector
	}{eb.Spec.S3, string(eb.UID), eb.Generation, sel}
	var chosen backupselect.Entry
	found, err := r.lookups.find(ctx, lookupID(er, inputs), "of EtcdBackup "+eb.Name, func(ctx context.Context) lookupResult {
		e, err := backupselect.Pick(ctx, backupselect.Source{Store: store, Key: key, Namespace: eb.Namespace, Name: eb.Name}, sel)
		if errors.Is(err, backupselect.ErrNoMatch) {
			return lookupResult{err: &backupstorage.Error{Reason: etcdv1beta2.ReasonNoBackupMatches,
				Err: fmt.Errorf("EtcdBackup %s: %w; nothing was created or deleted", eb.Name, err)}}
		}
		if err != nil {
			return lookupResult{err: &backupstorage.Error{Reason: backupstorage.Reason(err), Err: err}}
		}
		return lookupResult{key: e.Key, entry: e}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if found.err != nil {
		return nil, nil, nil, found.err
	}
	chosen = found.entry
	if err := r.recordChosen(ctx, er, chosen); err != nil {
		return nil, nil, nil, err
	}
	pinned.Path = bucket + "/" + chosen.Key
	return pinned, store, eb, nil
}

// recordChosen writes the chosen object into status.backup (and says so in an event)
// unless it is there already. It is the one status write before the reconcile ends
// (status.go), on purpose: the choice is on record before any cluster is created from
// it. Only status.backup is written; what the reconcile reports so far is kept.
func (r *Reconciler) recordChosen(ctx context.Context, er *etcdv1beta2.EtcdRestore, e backupselect.Entry) error {
	want := &etcdv1beta2.ChosenBackup{Key: e.Key, Revision: e.Revision, Time: metav1.NewTime(e.Time), SHA256: e.SHA256}
	if b := er.Status.Backup; b != nil && b.Key == want.Key && b.Revision == want.Revision && b.SHA256 == want.SHA256 && b.Time.Equal(&want.Time) {
		return nil
	}
	orig := er.DeepCopy()
	cp := er.DeepCopy()
	cp.Status.Backup = want
	if err := r.Status().Patch(ctx, cp, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("record the chosen backup in EtcdRestore %s: %w", er.Name, err)
	}
	er.ObjectMeta, er.Status.Backup = cp.ObjectMeta, want
	msg := fmt.Sprintf("chose backup %s (revision %d, taken %s) of EtcdBackup %s", e.Key, e.Revision, e.Time.UTC().Format(time.RFC3339), restoreorigin.BackupRef(er))
	log.FromContext(ctx).Info("backup chosen", "key", e.Key, "revision", e.Revision)
	r.Recorder.Event(er, corev1.EventTypeNormal, etcdv1beta2.EventReasonBackupChosen, msg)
	return nil
}

// originOK: c is er's own cluster. Judged from what er recorded, never from the
// EtcdBackup it names as it is now (its Secret or path may have changed since the
// cluster was created from it): the cluster er recorded creating (its UID, whatever its
// annotation says now), or, for a restore that names an EtcdBackup, an annotation naming
// er (name and UID) and pinned to the object recorded in er's status.backup. A false
// answer can lead to the cluster's deletion (with replace-existing-cluster); a true one
// only ever keeps it.
func (r *Reconciler) originOK(c *etcdv1beta2.EtcdCluster, er *etcdv1beta2.EtcdRestore) bool {
	if c.UID != "" && string(c.UID) == restoreorigin.RecordedUID(er) {
		return true
	}
	if restoreorigin.BackupRef(er) == "" {
		return createdBy(c, er)
	}
	src, err := render.Restore(c)
	return err == nil && src != nil && restoreorigin.CheckChosen(er, c.Name, src) == nil
}

// recordCreated writes restoreorigin.CreatedClusterAnnotation on er for c, the cluster it
// has just created: what later proves the cluster is er's own when the objects er read
// (an EtcdBackup's storage) have changed. Should this fail, the restore still recognises
// the cluster by its annotation (against er's spec, or status.backup for a backupRef) and
// the cluster controller judges the annotation against the live EtcdBackup, as before.
func (r *Reconciler) recordCreated(ctx context.Context, er *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) error {
	rec, err := restoreorigin.RecordOf(c)
	if err != nil {
		return fmt.Errorf("record EtcdCluster %s on EtcdRestore %s: %w", c.Name, er.Name, err)
	}
	if err := r.setAnnotation(ctx, er, restoreorigin.CreatedClusterAnnotation, rec); err != nil {
		return fmt.Errorf("record EtcdCluster %s on EtcdRestore %s: %w", c.Name, er.Name, err)
	}
	return nil
}
