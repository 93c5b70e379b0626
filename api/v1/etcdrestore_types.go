package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdRestoreSpec restores a backup into a new cluster.
// +kubebuilder:validation:XValidation:rule="self.storageType != 'S3' || has(self.s3) || has(self.backupRef)",message="storageType S3 needs spec.s3 or spec.backupRef",fieldPath=".s3"
// +kubebuilder:validation:XValidation:rule="!has(self.backupRef) || (!has(self.s3) && !has(self.pvc))",message="spec.backupRef reads the EtcdBackup's storage and objects: give it or spec.s3/spec.pvc (an object key), not both",fieldPath=".backupRef"
// +kubebuilder:validation:XValidation:rule="!has(self.backupRef) || self.storageType == 'S3'",message="spec.backupRef needs storageType S3 (the operator cannot list a PVC)",fieldPath=".storageType"
// +kubebuilder:validation:XValidation:rule="!has(self.select) || has(self.backupRef)",message="spec.select chooses among an EtcdBackup's objects: it needs spec.backupRef",fieldPath=".select"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'PVC' || has(self.pvc)",message="storageType PVC needs spec.pvc",fieldPath=".pvc"
type EtcdRestoreSpec struct {
	// EtcdCluster names the cluster to create from the backup. An existing cluster of that
	// name is never deleted: the restore is refused instead.
	EtcdCluster EtcdClusterRef `json:"etcdCluster"`
	// StorageType is where the backup is read from. It is v1beta2's backupStorageType.
	StorageType BackupStorageType `json:"storageType"`
	// BackupRef names an EtcdBackup of this namespace: the restore reads its storage
	// (spec.s3 and Secret) and takes one of the objects it wrote, the newest unless
	// spec.select says otherwise. Instead of spec.s3 or spec.pvc. Stored as the v1beta2
	// annotation etcd.database.coreos.com/restore-backup-ref.
	// +optional
	BackupRef *BackupRef `json:"backupRef,omitempty"`
	// Select chooses among the objects of spec.backupRef: by time, by revision or both.
	// Stored as the v1beta2 annotations etcd.database.coreos.com/restore-newest-before
	// and restore-min-revision.
	// +optional
	Select *BackupSelector `json:"select,omitempty"`

	StorageSource `json:",inline"`
}

// EtcdClusterRef names an EtcdCluster in the restore's namespace.
type EtcdClusterRef struct {
	// Name of the EtcdCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// EtcdRestoreStatus reports the restore.
type EtcdRestoreStatus struct {
	// Succeeded is true once the new cluster was created from the backup.
	// +optional
	Succeeded bool `json:"succeeded,omitempty"`
	// Reason explains a failure.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Backup is the object the restore chose, recorded before it acts on it.
	// +optional
	Backup *ChosenBackup `json:"backup,omitempty"`
	// Conditions of the restore.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdRestore creates an etcd cluster from a backup.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.etcdCluster.name`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storageType`
// +kubebuilder:printcolumn:name="Succeeded",type=boolean,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the restore to perform.
	Spec EtcdRestoreSpec `json:"spec"`
	// Status reports the restore.
	// +optional
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
