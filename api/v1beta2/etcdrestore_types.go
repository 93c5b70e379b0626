package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdRestoreSpec restores a backup into a new cluster.
// backupStorageType S3 needs spec.s3 unless the restore-backup-ref annotation names an
// EtcdBackup; rules here cannot read annotations, so the operator reports a missing s3
// (InvalidSpec naming spec.s3).
// +kubebuilder:validation:XValidation:rule="self.backupStorageType != 'PVC' || has(self.pvc)",message="backupStorageType PVC needs spec.pvc",fieldPath=".pvc"
type EtcdRestoreSpec struct {
	// EtcdCluster names the cluster to create from the backup. Unlike CoreOS's operator,
	// an existing cluster of that name is never deleted: the restore is refused instead.
	EtcdCluster EtcdClusterRef `json:"etcdCluster"`
	// BackupStorageType is where the backup is read from.
	BackupStorageType BackupStorageType `json:"backupStorageType"`

	RestoreSource `json:",inline"`
}

// EtcdClusterRef names an EtcdCluster in the restore's namespace.
type EtcdClusterRef struct {
	// Name of the EtcdCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// RestoreSource is where the backup is read; the one named by backupStorageType is used.
type RestoreSource struct {
	// S3 is an S3-compatible object store; path names the backup object.
	// +optional
	S3 *S3BackupSource `json:"s3,omitempty"`
	// ABS is Azure Blob Storage (unsupported).
	// +optional
	ABS *ABSBackupSource `json:"abs,omitempty"`
	// GCS is Google Cloud Storage (unsupported natively).
	// +optional
	GCS *GCSBackupSource `json:"gcs,omitempty"`
	// OSS is Alibaba Cloud OSS (unsupported natively).
	// +optional
	OSS *OSSBackupSource `json:"oss,omitempty"`
	// PVC is a PersistentVolumeClaim.
	// +optional
	PVC *PVCBackupSource `json:"pvc,omitempty"`
}

// EtcdRestoreStatus reports the restore.
type EtcdRestoreStatus struct {
	// Succeeded is true once the new cluster was created from the backup. Always
	// serialised, as CoreOS did.
	// Defaulted to false, so every read shows it.
	// +optional
	// +kubebuilder:default=false
	Succeeded bool `json:"succeeded"`
	// Reason explains a failure.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Backup is the object the restore chose, recorded before it acts on it.
	// +optional
	Backup *ChosenBackup `json:"backup,omitempty"`
	// Conditions (added by this operator).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdRestore creates an etcd cluster from a backup.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.etcdCluster.name`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.backupStorageType`
// +kubebuilder:printcolumn:name="Succeeded",type=boolean,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec EtcdRestoreSpec `json:"spec"`
	// Status reports the restore. Always present in this version, with succeeded, as CoreOS
	// wrote it (defaulted: a read shows it before the first status write too).
	// +kubebuilder:default={}
	Status EtcdRestoreStatus `json:"status,omitempty"`
}

// EtcdRestoreList is a list of EtcdRestore.
// +kubebuilder:object:root=true
type EtcdRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdRestore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdRestore{}, &EtcdRestoreList{})
}
