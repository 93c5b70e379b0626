// Package restoreorigin tells whether a cluster's restore annotation is what an
// EtcdRestore wrote. The annotation is only a claim (anyone who may edit the EtcdCluster
// can write it): the cluster controller honours it, and the restore controller follows a
// cluster, only if the EtcdRestore it names would have written exactly that.
package restoreorigin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Check checks that src, read from cluster's annotation, is what er would have
// written: the same EtcdRestore (name and UID), the same cluster name, the backup its
// spec resolves to (for S3 the exact object or one of its periodic backups, with the
// same secret, endpoint and addressing; for a PVC the same claim and file), and the
// SHA-256 er recorded (samePin).
func Check(er *etcdv1beta2.EtcdRestore, cluster string, src *render.RestoreSource) error {
	if err := namesRestore(er, cluster, src); err != nil {
		return err
	}
	if BackupRef(er) != "" {
		return errNeedsBackup
	}
	if err := samePin(er, cluster, src); err != nil {
		return err
	}
	switch er.Spec.BackupStorageType {
	case etcdv1beta2.BackupStorageTypeS3:
		return sameS3Backup(er.Spec.S3, src)
	case etcdv1beta2.BackupStorageTypePVC:
		return samePVCBackup(er.Spec.PVC, src)
	}
	return fmt.Errorf("EtcdRestore %s has storage type %q", er.Name, er.Spec.BackupStorageType)
}

// namesRestore checks that src names er (name and UID) and er restores cluster.
func namesRestore(er *etcdv1beta2.EtcdRestore, cluster string, src *render.RestoreSource) error {
	switch {
	case src.Restore != er.Name:
		return fmt.Errorf("it names EtcdRestore %q, not %q", src.Restore, er.Name)
	case src.UID == "" || src.UID != string(er.UID):
		return fmt.Errorf("EtcdRestore %s has uid %s, the annotation records %q", er.Name, er.UID, src.UID)
	case er.Spec.EtcdCluster.Name != cluster:
		return fmt.Errorf("EtcdRestore %s restores EtcdCluster %q, not %q", er.Name, er.Spec.EtcdCluster.Name, cluster)
	}
	return nil
}

func sameS3Backup(spec *etcdv1beta2.S3BackupSource, src *render.RestoreSource) error {
	if spec == nil || src.S3 == nil || src.PVC != nil {
		return errors.New("the annotation's backup is not on S3 like the EtcdRestore's (it names a pvc)")
	}
	switch {
	case src.S3.AWSSecret != spec.AWSSecret:
		return fmt.Errorf("s3.awsSecret %q is not the EtcdRestore's %q", src.S3.AWSSecret, spec.AWSSecret)
	case src.S3.CredentialsSource != spec.CredentialsSource:
		return fmt.Errorf("s3.credentialsSource %q is not the EtcdRestore's %q", src.S3.CredentialsSource, spec.CredentialsSource)
	case src.S3.EncryptionKeySecret != spec.EncryptionKeySecret:
		return fmt.Errorf("s3.encryptionKeySecret %q is not the EtcdRestore's %q", src.S3.EncryptionKeySecret, spec.EncryptionKeySecret)
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

// samePin checks the annotation's sha256 against every pin er recorded: the source of
// the cluster of this name it recorded creating (CreatedClusterAnnotation; Check is the
// fallback when that record no longer matches the cluster as a whole, e.g. a cluster
// recreated under the name with a copied annotation, so the pin is compared on its own)
// and the object it chose (status.backup). A PVC restore is never pinned by the
// operator (it cannot read the claim). With no record (one that could not be written)
// there is nothing to compare, and the restore step still checks the bytes against
// the pin and the snapshot itself.
func samePin(er *etcdv1beta2.EtcdRestore, cluster string, src *render.RestoreSource) error {
	if src.PVC != nil {
		if src.SHA256 != "" {
			return fmt.Errorf("sha256 %q for a backup on a pvc, which the operator never pins", src.SHA256)
		}
		return nil
	}
	if raw, ok := er.Annotations[CreatedClusterAnnotation]; ok {
		var rec CreatedCluster
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return fmt.Errorf("annotation %s of EtcdRestore %s: %w", CreatedClusterAnnotation, er.Name, err)
		}
		if rec.Name == cluster && !strings.EqualFold(src.SHA256, rec.Source.SHA256) {
			return fmt.Errorf("sha256 %q is not the %q EtcdRestore %s recorded writing for EtcdCluster %s", src.SHA256, rec.Source.SHA256, er.Name, cluster)
		}
	}
	if b := er.Status.Backup; b != nil && b.SHA256 != "" && !strings.EqualFold(src.SHA256, b.SHA256) {
		return fmt.Errorf("sha256 %q is not the %s of the object EtcdRestore %s chose", src.SHA256, b.SHA256, er.Name)
	}
	return nil
}
