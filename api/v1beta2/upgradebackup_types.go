package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A backup before every minor upgrade (internal/planner/upgradebackup.go).
const (
	// UpgradeBackupAnnotation on an EtcdCluster says whether a backup is taken before each
	// minor upgrade step: "auto" (the default, also when absent or empty) takes one to the
	// cluster's configured EtcdBackup target and proceeds without one, saying so, when no
	// EtcdBackup names the cluster; "required" refuses the step without a target; "skip"
	// takes none (the opt-out). The same annotation in both API versions (v1 has no field
	// for it).
	UpgradeBackupAnnotation = "etcd.database.coreos.com/upgrade-backup"

	// UpgradeBackupOfLabel marks the one-shot EtcdBackup the operator creates before a
	// minor step, and the claim it creates for it when no EtcdBackup names the cluster;
	// its value is the cluster's name. UpgradeBackupUIDLabel holds the UID of
	// the cluster it was taken of: a cluster recreated under the same name (a rollback)
	// never takes an older incarnation's backup as its own.
	UpgradeBackupOfLabel  = "etcd.database.coreos.com/upgrade-backup-of"
	UpgradeBackupUIDLabel = "etcd.database.coreos.com/upgrade-backup-uid"
)

// Values of UpgradeBackupAnnotation.
const (
	UpgradeBackupAuto     = "auto"
	UpgradeBackupRequired = "required"
	UpgradeBackupSkip     = "skip"
)

// UpgradeBackupStatus records the backup taken (or why none was) before the last minor
// upgrade step the operator started.
type UpgradeBackupStatus struct {
	// Version is the version the step upgrades to.
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`
	// FromVersion is the version the members ran when the backup was taken.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FromVersion string `json:"fromVersion,omitempty"`
	// Backup names the one-shot EtcdBackup that holds the snapshot, in the cluster's
	// namespace. Roll back with an EtcdRestore annotated
	// etcd.database.coreos.com/restore-backup-ref=<backup> and
	// etcd.database.coreos.com/replace-existing-cluster=true.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Backup string `json:"backup,omitempty"`
	// Claim names the PersistentVolumeClaim the operator created for the snapshot when no
	// EtcdBackup names the cluster (the claim fallback); empty when the backup went to a
	// configured target. The claim and Backup are owned by the cluster: deleted with it,
	// and when the backup of a later minor step is taken (only the newest is kept).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Claim string `json:"claim,omitempty"`
	// Key is the object's key in the bucket (S3) or its path below the claim (PVC).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key,omitempty"`
	// Revision is the etcd revision the snapshot holds.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Time is when the snapshot was taken.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// Skipped says why no backup was taken (NoBackupStorage, UpgradeBackupSkipped, or
	// NoBackupTarget from operators without the claim fallback); empty
	// when one was.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Skipped string `json:"skipped,omitempty"`
	// Created lists the claim fallback's EtcdBackups and claims the operator created and
	// has not deleted yet, each by the UID its create returned. Only an object recorded
	// here is taken as the operator's: names are predictable and labels and owner
	// references are anyone's to write, a UID is not. At most MaxUpgradeBackupsCreated.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Created []UpgradeBackupCreated `json:"created,omitempty"`
}

// MaxUpgradeBackupsCreated bounds status.upgradeBackup.created: the operator keeps at
// most three claim-fallback snapshots and deletes the others before it makes a new one.
const MaxUpgradeBackupsCreated = 8

// UpgradeBackupCreated is one claim-fallback backup the operator created: the one-shot
// EtcdBackup and the claim of one name.
type UpgradeBackupCreated struct {
	// Name of the EtcdBackup and of the claim it writes to.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// ClaimUID is the claim's UID as the operator's create returned it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ClaimUID string `json:"claimUID,omitempty"`
	// BackupUID is the EtcdBackup's UID as the operator's create returned it; empty until
	// the operator created it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	BackupUID string `json:"backupUID,omitempty"`
}
