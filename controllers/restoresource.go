package controllers

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

// errRestoreRejected marks a restore annotation that is not provably the operator's.
var errRestoreRejected = errors.New("restore annotation not written by this operator")

// restoreStep is the restore step for members about to be created: nil unless one of
// them bootstraps from a backup. The cluster's restore annotation is only a claim (anyone
// who may edit the EtcdCluster can write it), so it is honoured only if it is the
// operator's own: the EtcdRestore it names exists in the cluster's namespace with the
// recorded UID, names this cluster, and its spec resolves to that very backup. The init
// container always runs the operator's configured image. Otherwise nothing may be
// created: bootstrapping an empty cluster where a restore was asked for would look like
// data loss, and mounting a Secret or claim named only by an annotation would let an
// annotation reach what its writer may not.
func (r *EtcdClusterReconciler) restoreStep(ctx context.Context, c *etcdv1beta2.EtcdCluster, members []render.Member) (*render.RestoreStep, error) {
	if _, ok := c.Annotations[render.AnnotationRestore]; !ok || !bootstrapsFromBackup(members) {
		return nil, nil
	}
	src, err := render.Restore(c)
	if err == nil {
		err = r.checkRestoreOrigin(ctx, c, src)
	}
	if err != nil {
		msg := fmt.Sprintf("%s; no member was created. Remove the annotation %s to start an empty cluster, or restore with an EtcdRestore: %v",
			errRestoreRejected, render.AnnotationRestore, err)
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoreSourceRejected, msg)
		return nil, fmt.Errorf("%w: %w", errRestoreRejected, err)
	}
	return &render.RestoreStep{Source: *src, Image: r.OperatorImage}, nil
}

// bootstrapsFromBackup: some member starts a new cluster from the backup (a recovering
// member copies a survivor instead; joining members sync from their peers).
func bootstrapsFromBackup(members []render.Member) bool {
	for _, m := range members {
		if m.InitialClusterState == render.StateNew && m.Recovery == nil {
			return true
		}
	}
	return false
}

// checkRestoreOrigin finds the EtcdRestore the annotation names and checks that it is
// the one that created this cluster from src.
func (r *EtcdClusterReconciler) checkRestoreOrigin(ctx context.Context, c *etcdv1beta2.EtcdCluster, src *render.RestoreSource) error {
	var er etcdv1beta2.EtcdRestore
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: src.Restore}, &er)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("EtcdRestore %s/%s not found", c.Namespace, src.Restore)
	}
	if err != nil {
		return err
	}
	return restoreCreated(&er, c.Name, src)
}

// restoreCreated checks that src, read from cluster's annotation, is what er would have
// written: the same EtcdRestore (name and UID), the same cluster name, and the backup
// its spec resolves to (for S3 the exact object or one of its periodic backups, with
// the same secret, endpoint and addressing; for a PVC the same claim and file).
func restoreCreated(er *etcdv1beta2.EtcdRestore, cluster string, src *render.RestoreSource) error {
	switch {
	case src.Restore != er.Name:
		return fmt.Errorf("it names EtcdRestore %q, not %q", src.Restore, er.Name)
	case src.UID == "" || src.UID != string(er.UID):
		return fmt.Errorf("EtcdRestore %s has uid %s, the annotation records %q", er.Name, er.UID, src.UID)
	case er.Spec.EtcdCluster.Name != cluster:
		return fmt.Errorf("EtcdRestore %s restores EtcdCluster %q, not %q", er.Name, er.Spec.EtcdCluster.Name, cluster)
	}
	switch er.Spec.BackupStorageType {
	case etcdv1beta2.BackupStorageTypeS3:
		return sameS3Backup(er.Spec.S3, src)
	case etcdv1beta2.BackupStorageTypePVC:
		return samePVCBackup(er.Spec.PVC, src)
	}
	return fmt.Errorf("EtcdRestore %s has storage type %q", er.Name, er.Spec.BackupStorageType)
}

func sameS3Backup(spec *etcdv1beta2.S3BackupSource, src *render.RestoreSource) error {
	if spec == nil || src.S3 == nil || src.PVC != nil {
		return errors.New("the annotation's backup is not on S3 like the EtcdRestore's (it names a pvc)")
	}
	switch {
	case src.S3.AWSSecret != spec.AWSSecret:
		return fmt.Errorf("s3.awsSecret %q is not the EtcdRestore's %q", src.S3.AWSSecret, spec.AWSSecret)
	case src.S3.Endpoint != spec.Endpoint:
		return fmt.Errorf("s3.endpoint %q is not the EtcdRestore's %q", src.S3.Endpoint, spec.Endpoint)
	case src.S3.ForcePathStyle != spec.ForcePathStyle:
		return errors.New("s3.forcePathStyle differs from the EtcdRestore's")
	}
	wantBucket, wantKey, err := backup.SplitS3Path(spec.Path)
	if err != nil {
		return err
	}
	bucket, key, err := backup.SplitS3Path(src.S3.Path)
	if err != nil {
		return err
	}
	if _, _, periodic := backup.ParsePeriodicKey(wantKey, key); bucket != wantBucket || (key != wantKey && !periodic) {
		return fmt.Errorf("s3.path %q is neither the EtcdRestore's %q nor one of its periodic backups", src.S3.Path, spec.Path)
	}
	return nil
}

func samePVCBackup(spec *etcdv1beta2.PVCBackupSource, src *render.RestoreSource) error {
	if spec == nil || src.PVC == nil || src.S3 != nil {
		return errors.New("the annotation's backup is not on a pvc like the EtcdRestore's")
	}
	if src.PVC.ClaimName != spec.ClaimName {
		return fmt.Errorf("pvc.claimName %q is not the EtcdRestore's %q", src.PVC.ClaimName, spec.ClaimName)
	}
	want, err := render.CleanBackupPath(spec.Path)
	if err != nil {
		return err
	}
	if got, _ := render.CleanBackupPath(src.PVC.Path); got != want {
		return fmt.Errorf("pvc.path %q is not the EtcdRestore's %q", src.PVC.Path, spec.Path)
	}
	return nil
}
