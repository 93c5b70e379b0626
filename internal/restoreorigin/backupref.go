package restoreorigin

import (
	"errors"
	"fmt"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// BackupRef is the EtcdBackup an EtcdRestore reads its storage and objects from (its
// restore-backup-ref annotation, v1 spec.backupRef), or "".
func BackupRef(er *etcdv1beta2.EtcdRestore) string {
	return er.Annotations[etcdv1beta2.RestoreBackupRefAnnotation]
}

// errNeedsBackup: Check cannot judge a restore that names an EtcdBackup without it.
var errNeedsBackup = errors.New("the EtcdRestore reads an EtcdBackup's storage; check it with that EtcdBackup")

// CheckWithBackup is Check for an EtcdRestore that names an EtcdBackup: the backup's
// storage (read fresh by the caller from the restore's own namespace) stands in for the
// restore's spec.s3, so the annotation must name one of that storage's objects with
// that backup's Secret, endpoint and addressing.
func CheckWithBackup(er *etcdv1beta2.EtcdRestore, cluster string, src *render.RestoreSource, eb *etcdv1beta2.EtcdBackup) error {
	name := BackupRef(er)
	switch {
	case name == "":
		return Check(er, cluster, src)
	case eb == nil || eb.Namespace != er.Namespace || eb.Name != name:
		return fmt.Errorf("EtcdRestore %s reads EtcdBackup %s/%s, which was not given", er.Name, er.Namespace, name)
	case eb.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 || eb.Spec.S3 == nil:
		return fmt.Errorf("EtcdBackup %s does not store on S3", eb.Name)
	}
	resolved := er.DeepCopy()
	resolved.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypeS3
	resolved.Spec.S3 = eb.Spec.S3.DeepCopy()
	delete(resolved.Annotations, etcdv1beta2.RestoreBackupRefAnnotation)
	return Check(resolved, cluster, src)
}
