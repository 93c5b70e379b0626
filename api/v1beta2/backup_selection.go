package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Choosing the backup a restore takes among the objects one EtcdBackup wrote. CoreOS's
// EtcdRestore names one object (s3.path); v1's spec.backupRef and spec.select are stored
// as these annotations, which a v1beta2 EtcdRestore may carry itself.
const (
	// RestoreBackupRefAnnotation names an EtcdBackup of the restore's namespace. The
	// restore then reads that backup's storage (its spec.s3, with its Secret) and takes
	// one of the objects it wrote: the newest, unless a selection annotation below says
	// otherwise. spec.s3 and spec.pvc must then be left out.
	RestoreBackupRefAnnotation = "etcd.database.coreos.com/restore-backup-ref"
	// RestoreNewestBeforeAnnotation (RFC 3339, e.g. 2026-12-03T10:00:00Z or with an
	// offset) takes the newest of the backup's objects taken at or before that time.
	RestoreNewestBeforeAnnotation = "etcd.database.coreos.com/restore-newest-before"
	// RestoreMinRevisionAnnotation (a positive integer) admits only objects holding at
	// least that etcd revision; alone, it takes the first of them (the lowest revision).
	RestoreMinRevisionAnnotation = "etcd.database.coreos.com/restore-min-revision"
)

// MaxStatusBackups bounds EtcdBackup status.backups.
const MaxStatusBackups = 10

// StoredBackup is one backup object an EtcdBackup holds in its storage.
type StoredBackup struct {
	// Key of the object in the bucket.
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`
	// Revision is the etcd revision the snapshot holds.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Time is when the snapshot was taken.
	// +optional
	Time metav1.Time `json:"time,omitempty"`
	// Size of the stored object in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// SHA256 of the stored bytes (hex); empty for an object stored without one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256,omitempty"`
	// Verified is true once the object was restored into a throwaway member and served
	// its revision.
	// +optional
	Verified bool `json:"verified,omitempty"`
}

// ChosenBackup is the object a restore chose, recorded before the restore acts on it.
type ChosenBackup struct {
	// Key of the object in the bucket.
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`
	// Revision is the etcd revision the snapshot holds.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Time is when the snapshot was taken.
	// +optional
	Time metav1.Time `json:"time,omitempty"`
	// SHA256 of the stored bytes (hex); empty for an object stored without one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256,omitempty"`
}
