package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdBackupSpec is a one-shot or periodic backup of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="self.storageType != 'S3' || has(self.s3)",message="storageType S3 needs spec.s3",fieldPath=".s3"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'PVC' || has(self.pvc)",message="storageType PVC needs spec.pvc",fieldPath=".pvc"
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterRef) && has(self.etcdEndpoints))",message="give spec.clusterRef or spec.etcdEndpoints, not both",fieldPath=".clusterRef"
type EtcdBackupSpec struct {
	// ClusterRef names the EtcdCluster to back up, in the backup's namespace; the operator
	// finds its members and, unless clientTLSSecret is set, uses the cluster's
	// operatorSecret for a TLS cluster. Give it or etcdEndpoints, not both.
	// +optional
	ClusterRef *EtcdClusterRef `json:"clusterRef,omitempty"`
	// EtcdEndpoints are client URLs of the cluster to back up. They must name an
	// EtcdCluster of the backup's namespace (<cluster>-client[.<ns>.svc...],
	// <member>.<cluster>.<ns>.svc[...] or a member pod's IP); the operator then dials that
	// cluster's member pods itself. Other endpoints are refused unless the operator runs
	// with --allow-external-backup-endpoints. Prefer clusterRef.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`
	// StorageType is where the backup goes: S3 or PVC. ABS, GCS and OSS are accepted and
	// reported as unsupported in status.
	// +kubebuilder:default=S3
	StorageType BackupStorageType `json:"storageType"`
	// BackupPolicy makes the backup periodic and bounds it in time and count.
	// +optional
	BackupPolicy *BackupPolicy `json:"backupPolicy,omitempty"`
	// ClientTLSSecret names a Secret with etcd-client.crt, etcd-client.key and
	// etcd-client-ca.crt for TLS-secured clusters.
	// +optional
	ClientTLSSecret string `json:"clientTLSSecret,omitempty"`
	// Compression of the stored snapshots: gzip, or none (the default: as etcd wrote
	// them, restorable by any etcdutl). The restore step reads it from the stored
	// object, so backups of both kinds restore alike. It is v1beta2's
	// etcd.database.coreos.com/backup-compression annotation.
	// +optional
	// +kubebuilder:validation:Enum=none;gzip
	Compression BackupCompression `json:"compression,omitempty"`

	// Verification restores backups into a short-lived one-member etcd and checks that it
	// starts and serves the revision and key count recorded at backup time. Stored as the
	// v1beta2 annotations etcd.database.coreos.com/backup-verify-*.
	// +optional
	Verification  *BackupVerification `json:"verification,omitempty"`
	StorageSource `json:",inline"`
}

// BackupVerification says when backups are verified. Each verification restores the
// newest backup into a pod of the backup's namespace (the backup's etcd version, the
// cluster's image repository, no Service), checks it and deletes the pod; status
// (lastVerified*, the Verified condition) and events report the outcome.
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || size(self.timeZone) == 0 || (has(self.schedule) && size(self.schedule) > 0)",message="verification.timeZone needs verification.schedule",fieldPath=".timeZone"
type BackupVerification struct {
	// AfterEachBackup verifies each backup right after it is stored.
	// +optional
	AfterEachBackup bool `json:"afterEachBackup,omitempty"`
	// Schedule verifies the newest backup on a cron schedule of its own: five fields or a
	// macro, as backupPolicy.schedule.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`
	// TimeZone is the IANA time zone Schedule is read in; default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}

// BackupCompression is how stored snapshots are compressed.
type BackupCompression string

// Compressions.
const (
	BackupCompressionNone BackupCompression = "none"
	BackupCompressionGzip BackupCompression = "gzip"
)

// BackupPolicy controls timing and retention.
type BackupPolicy struct {
	// Timeout bounds one backup, e.g. 90s; unset or 0s means the operator's default (60s).
	// At most 24h. It is v1beta2's timeoutInSecond.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="timeout must not be negative"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('24h')",message="timeout must be at most 24h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// BackupInterval makes the backup periodic, e.g. 1h; unset or 0s takes one backup. At
	// most 8784h (366 days). It is v1beta2's backupIntervalInSecond.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="backupInterval must not be negative"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('8784h')",message="backupInterval must be at most 8784h (366 days)"
	BackupInterval *metav1.Duration `json:"backupInterval,omitempty"`
	// Schedule makes the backup periodic on a cron schedule, as a CronJob's: five fields
	// (minute hour day-of-month month day-of-week, e.g. "0 2 * * *" for 02:00 daily) or a
	// macro (@hourly, @daily, @weekly, @monthly, @yearly, "@every 30m"). Use it or
	// backupInterval, not both. After runs missed while the operator was down, one backup
	// catches up. Stored as the v1beta2 annotation etcd.database.coreos.com/backup-schedule.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`
	// TimeZone is the IANA time zone Schedule is read in, e.g. Europe/Berlin; default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
	// MaxBackups keeps only the newest this many periodic backups; 0 keeps all. At most
	// 10000.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MaxBackups int `json:"maxBackups,omitempty"`
	// MaxAge deletes periodic backups older than this, e.g. 720h, after each backup; unset
	// or 0s keeps them whatever their age. The newest backup is never deleted, however old,
	// and only backups this EtcdBackup's path names are considered. At most 8784h. It is
	// v1beta2's maxAgeInSecond.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="maxAge must not be negative"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('8784h')",message="maxAge must be at most 8784h (366 days)"
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// EtcdBackupStatus reports the last backup.
type EtcdBackupStatus struct {
	// Succeeded is true when the last backup succeeded.
	// +optional
	Succeeded bool `json:"succeeded,omitempty"`
	// Reason explains a failed backup. It is v1beta2's capitalised Reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// EtcdVersion of the member the last snapshot was taken from.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// EtcdRevision the last snapshot holds.
	// +optional
	EtcdRevision int64 `json:"etcdRevision,omitempty"`
	// LastSuccessTime is when the last backup succeeded. It is v1beta2's lastSuccessDate.
	// +optional
	LastSuccessTime metav1.Time `json:"lastSuccessTime,omitempty"`
	// LastScheduleTime is the scheduled time of the last periodic run (after missed runs,
	// the latest one missed: one catch-up run, not one per missed run).
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the next periodic backup runs.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastBackupNow is the value of the etcd.database.coreos.com/backup-now annotation last
	// honoured: each new value takes one backup at once.
	// +optional
	LastBackupNow string `json:"lastBackupNow,omitempty"`
	// LastVerifiedTime is when a backup last passed verification (restored into a
	// one-member etcd that served the recorded revision and key count).
	// +optional
	LastVerifiedTime *metav1.Time `json:"lastVerifiedTime,omitempty"`
	// LastVerifiedKey is the object that passed: its key in the bucket (S3) or its path
	// below the claim (PVC).
	// +optional
	LastVerifiedKey string `json:"lastVerifiedKey,omitempty"`
	// LastVerifiedRevision is the revision recorded with that backup, which the restored
	// member served.
	// +optional
	LastVerifiedRevision int64 `json:"lastVerifiedRevision,omitempty"`
	// LastVerifiedSHA256 is the SHA-256 (hex) of the bytes that passed: the object's
	// stored checksum, or what the verification read for an object without one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastVerifiedSHA256 string `json:"lastVerifiedSHA256,omitempty"`
	// LastVerifiedPinSignature is the operator's signature (HMAC-SHA256, hex, with a key
	// kept in the operator's own namespace) over this namespace, this EtcdBackup's name and
	// UID, its storage (bucket and endpoint, or claim), lastVerifiedKey,
	// lastVerifiedSHA256 and lastVerifiedRevision. An EtcdRestore of exactly that object
	// carries it to the restored members, and the operator lets their restore step skip
	// the snapshot checks this verification already ran only if the signature verifies
	// against what the operator reads itself. Editing it (or any field it covers) only
	// makes a restore run those checks again.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastVerifiedPinSignature string `json:"lastVerifiedPinSignature,omitempty"`
	// LastVerificationStartTime is when the last verification, passed or failed, started.
	// +optional
	LastVerificationStartTime *metav1.Time `json:"lastVerificationStartTime,omitempty"`
	// Backups are the newest objects this backup holds (at most 10), newest first,
	// updated after each backup and its retention.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Backups []StoredBackup `json:"backups,omitempty"`
	// Conditions of the backup.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackup takes one or periodic snapshots of an etcd cluster. Deleting it never deletes
// stored backups.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storageType`
// +kubebuilder:printcolumn:name="Succeeded",type=boolean,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.etcdRevision`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessTime`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the backup to take.
	Spec EtcdBackupSpec `json:"spec"`
	// Status reports the last backup.
	// +optional
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// EtcdBackupList is a list of EtcdBackup.
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdBackup{}, &EtcdBackupList{})
}
