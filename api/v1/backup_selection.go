package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupRef names an EtcdBackup in the restore's namespace.
type BackupRef struct {
	// Name of the EtcdBackup.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BackupSelector chooses one of the objects an EtcdBackup wrote. Both fields together
// take the newest object taken at or before newestBefore that holds minRevision.
// +kubebuilder:validation:MinProperties=1
type BackupSelector struct {
	// NewestBefore takes the newest object taken at or before this time (RFC 3339, any
	// offset, e.g. 2026-12-03T10:00:00Z).
	// +optional
	NewestBefore *metav1.Time `json:"newestBefore,omitempty"`
	// MinRevision admits only objects holding at least this etcd revision; alone, it
	// takes the first of them (the lowest revision: the backup closest to it).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinRevision int64 `json:"minRevision,omitempty"`
}

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
