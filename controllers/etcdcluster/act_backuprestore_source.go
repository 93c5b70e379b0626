package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// backupRestoreStep is the restore step of the member a recorded total-loss restore
// creates (ok false when members holds no such member). Status is only a claim (whoever
// may write the status subresource can write it), so the record is honoured only if the
// EtcdBackup it names exists in the cluster's namespace with the recorded UID, still
// targets this cluster, and wrote the recorded object (its key, or one of its periodic
// backups). The Secret, endpoint and addressing come from that EtcdBackup, never from
// status, and the init container runs the operator's configured image.
func (r *Reconciler) backupRestoreStep(ctx context.Context, c *etcdv1beta2.EtcdCluster, members []render.Member) (*render.RestoreStep, bool, error) {
	rec := c.Status.BackupRestore
	if !rec.InProgress() || !bootstrapsMember(members, rec.Member) {
		return nil, false, nil
	}
	src, eb, err := r.checkBackupRestoreRecord(ctx, c, rec)
	if err != nil {
		msg := fmt.Sprintf("the recorded restore from backup is not provably the operator's; no member was created: %v", err)
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoreSourceRejected, msg)
		return nil, true, fmt.Errorf("%w: %w", errRestoreRejected, err)
	}
	step := &render.RestoreStep{Source: *src, Image: r.OperatorImage}
	step.ChecksPassedForPin = r.backupRestorePinProven(c, eb, src) // act_restorepin.go
	return step, true, nil
}

func bootstrapsMember(members []render.Member, name string) bool {
	for _, m := range members {
		if m.Name == name && m.InitialClusterState == render.StateNew && m.Recovery == nil {
			return true
		}
	}
	return false
}

// checkBackupRestoreRecord returns the restore source rec stands for and the EtcdBackup
// it read, or why it is not the operator's.
func (r *Reconciler) checkBackupRestoreRecord(ctx context.Context, c *etcdv1beta2.EtcdCluster, rec *etcdv1beta2.BackupRestoreStatus) (*render.RestoreSource, *etcdv1beta2.EtcdBackup, error) {
	var eb etcdv1beta2.EtcdBackup
	err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: rec.Backup}, &eb)
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("EtcdBackup %s/%s not found", c.Namespace, rec.Backup)
	}
	if err != nil {
		return nil, nil, err
	}
	clusters, err := r.clusterNames(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case rec.BackupUID == "" || string(eb.UID) != rec.BackupUID:
		return nil, nil, fmt.Errorf("EtcdBackup %s has uid %s, the record says %q", eb.Name, eb.UID, rec.BackupUID)
	case !backupTargets(&eb, c, clusters):
		return nil, nil, fmt.Errorf("EtcdBackup %s does not back up EtcdCluster %s", eb.Name, c.Name)
	case eb.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 || eb.Spec.S3 == nil:
		return nil, nil, fmt.Errorf("EtcdBackup %s does not store on S3", eb.Name)
	}
	if err := wroteObject(eb.Spec.S3.Path, rec.Path); err != nil {
		return nil, nil, fmt.Errorf("EtcdBackup %s: %w", eb.Name, err)
	}
	s3 := *eb.Spec.S3
	s3.Path = rec.Path
	src := &render.RestoreSource{S3: &s3, SHA256: rec.SHA256}
	if _, err := src.Annotations(); err != nil { // validates it as the renderer will
		return nil, nil, err
	}
	return src, &eb, nil
}

// wroteObject: path ("<bucket>/<key>") is the backup's own key or one of its periodic
// backups, in its bucket.
func wroteObject(specPath, path string) error {
	wantBucket, wantKey, err := backup.SplitS3Path(specPath)
	if err != nil {
		return err
	}
	bucket, key, err := backup.SplitS3Path(path)
	if err != nil {
		return err
	}
	if _, _, periodic := backup.ParsePeriodicKey(wantKey, key); bucket != wantBucket || key != wantKey && !periodic {
		return errors.New("the recorded object " + path + " is not one it wrote")
	}
	return nil
}
