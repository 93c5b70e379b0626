package pinsign

import (
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// BackupFacts are what the operator signs when a verification of eb's object key (bytes
// with SHA-256 sha256, holding revision) passes: eb by namespace, name and UID, its
// storage as its spec names it, and the object. The restore side rebuilds the same
// facts from what it reads itself and what it is about to render; they match only for
// exactly this object of exactly this EtcdBackup.
func BackupFacts(eb *etcdv1beta2.EtcdBackup, key, sha256 string, revision int64) Facts {
	f := Facts{Namespace: eb.Namespace, Backup: eb.Name, BackupUID: string(eb.UID), Key: key, SHA256: sha256, Revision: revision}
	switch {
	case eb.Spec.StorageType == etcdv1beta2.BackupStorageTypePVC && eb.Spec.PVC != nil:
		f.Claim = eb.Spec.PVC.ClaimName
	case eb.Spec.S3 != nil:
		f.Bucket, _, _ = backup.SplitS3Path(eb.Spec.S3.Path) // as the restore side splits it
		f.Endpoint = eb.Spec.S3.Endpoint
	}
	return f
}
