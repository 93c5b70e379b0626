package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupFinalizer is the finalizer CoreOS's operator put on periodic backups; kept so CRs
// carrying it are released. Removing it never deletes stored backups.
const BackupFinalizer = "backup-operator-periodic"

// BackupCompressionAnnotation set to "gzip" on an EtcdBackup stores its snapshots
// gzip-compressed ("none" or absent: as etcd wrote them). CoreOS's API has no field for
// it; v1's spec.compression is stored as this annotation.
const BackupCompressionAnnotation = "etcd.database.coreos.com/backup-compression"

// Periodic backups on a schedule. CoreOS's API has only backupIntervalInSecond; v1's
// spec.backupPolicy.schedule and timeZone are stored as these annotations.
const (
	// BackupScheduleAnnotation is a cron schedule for periodic backups: five fields
	// (minute hour day-of-month month day-of-week) or a macro such as @hourly, @daily or
	// "@every 30m". It takes the place of backupIntervalInSecond (setting both is refused).
	BackupScheduleAnnotation = "etcd.database.coreos.com/backup-schedule"
	// BackupTimeZoneAnnotation is the IANA time zone the schedule is read in (default UTC).
	BackupTimeZoneAnnotation = "etcd.database.coreos.com/backup-time-zone"
	// BackupNowAnnotation asks for one backup now, whatever the schedule: each new value
	// (`kubectl annotate etcdbackup NAME etcd.database.coreos.com/backup-now=$(date +%s)
	// --overwrite`) takes one; status.lastBackupNow records the value honoured.
	BackupNowAnnotation = "etcd.database.coreos.com/backup-now"
)

// Admission bounds of BackupPolicy (the markers on its fields repeat them: controller-gen
// reads literals only). Objects stored before the bounds existed may exceed them; the
// operator saturates rather than overflows (see BackupPolicy.Timeout and Interval).
const (
	MaxBackupTimeoutInSecond  = 24 * 60 * 60
	MaxBackupIntervalInSecond = 366 * 24 * 60 * 60
	MaxMaxBackups             = 10000
)

// EtcdBackupSpec is a one-shot or periodic backup of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="self.storageType != 'S3' || has(self.s3)",message="storageType S3 needs spec.s3",fieldPath=".s3"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'PVC' || has(self.pvc)",message="storageType PVC needs spec.pvc",fieldPath=".pvc"
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterRef) && has(self.etcdEndpoints))",message="give spec.clusterRef or spec.etcdEndpoints, not both",fieldPath=".clusterRef"
type EtcdBackupSpec struct {
	// ClusterRef names the EtcdCluster to back up, in the backup's namespace; the operator
	// finds its members and, unless clientTLSSecret is set, uses the cluster's
	// operatorSecret for a TLS cluster. Added by this operator (CoreOS CRs name endpoints
	// instead); give it or etcdEndpoints, not both.
	// +optional
	ClusterRef *EtcdClusterRef `json:"clusterRef,omitempty"`
	// EtcdEndpoints are client URLs of the cluster to back up, as in CoreOS's API. They
	// must name an EtcdCluster of the backup's namespace (<cluster>-client[.<ns>.svc...],
	// <member>.<cluster>.<ns>.svc[...] or a member pod's IP); the operator then dials that
	// cluster's member pods itself. Other endpoints are refused unless the operator runs
	// with --allow-external-backup-endpoints. The snapshot is taken from the member with
	// the highest revision.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`
	// StorageType is where the backup goes: S3 or PVC. ABS, GCS and OSS are accepted for
	// compatibility and reported as unsupported in status.
	// +kubebuilder:default=S3
	StorageType BackupStorageType `json:"storageType"`
	// BackupPolicy makes the backup periodic and bounds it in time and count.
	// +optional
	BackupPolicy *BackupPolicy `json:"backupPolicy,omitempty"`
	// ClientTLSSecret names a Secret with etcd-client.crt, etcd-client.key and
	// etcd-client-ca.crt for TLS-secured clusters.
	// +optional
	ClientTLSSecret string `json:"clientTLSSecret,omitempty"`

	BackupSource `json:",inline"`
}

// BackupSource is where backups are written; exactly the one named by storageType is used.
type BackupSource struct {
	// S3 is an S3-compatible object store.
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

// BackupPolicy controls timing and retention.
type BackupPolicy struct {
	// TimeoutInSecond bounds one backup; 0 means the operator's default (60 s). At most
	// MaxBackupTimeoutInSecond (one day).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	TimeoutInSecond int64 `json:"timeoutInSecond,omitempty"`
	// BackupIntervalInSecond makes the backup periodic; 0 takes one backup. At most
	// MaxBackupIntervalInSecond (366 days).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31622400
	BackupIntervalInSecond int64 `json:"backupIntervalInSecond,omitempty"`
	// MaxBackups keeps only the newest this many periodic backups; 0 keeps all. At most
	// MaxMaxBackups (10000).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MaxBackups int `json:"maxBackups,omitempty"`
	// MaxAgeInSecond deletes periodic backups older than this many seconds, after each
	// backup; 0 keeps them whatever their age. The newest backup is never deleted, however
	// old. Only backups this EtcdBackup's path names (<path>_v<revision>_<time>) are
	// considered. At most MaxBackupIntervalInSecond (366 days). (Added by this operator.)
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31622400
	MaxAgeInSecond int64 `json:"maxAgeInSecond,omitempty"`
}

// EtcdBackupStatus reports the last backup.
type EtcdBackupStatus struct {
	// Succeeded is true when the last backup succeeded. Always serialised, as CoreOS did.
	// Defaulted to false, so every read shows it.
	// +optional
	// +kubebuilder:default=false
	Succeeded bool `json:"succeeded"`
	// Reason explains a failed backup. Its JSON name is capitalised, as in CoreOS's operator.
	// +optional
	Reason string `json:"Reason,omitempty"`
	// EtcdVersion of the member the last snapshot was taken from.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// EtcdRevision the last snapshot holds.
	// +optional
	EtcdRevision int64 `json:"etcdRevision,omitempty"`
	// LastSuccessDate is when the last backup succeeded.
	// +optional
	LastSuccessDate metav1.Time `json:"lastSuccessDate,omitempty"`
	// LastScheduleTime is the scheduled time of the last periodic run (after missed runs,
	// the latest one missed: one catch-up run, not one per missed run).
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the next periodic backup runs.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastBackupNow is the value of the backup-now annotation last honoured.
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
	// LastVerifiedPinSignature would be the operator's signature (HMAC-SHA256, hex, with a
	// key kept in the operator's own namespace) over this namespace, this EtcdBackup's name
	// and UID, its storage (bucket and endpoint, or claim), lastVerifiedKey,
	// lastVerifiedSHA256 and lastVerifiedRevision, letting a restore of exactly that object
	// skip the snapshot checks. It is no longer written: those facts come from a
	// verification pod in the tenant's namespace, which the operator cannot tell from one
	// the tenant made or altered, so every restore runs the checks. Signatures an earlier
	// operator wrote do not verify; editing it only makes a restore run the checks.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastVerifiedPinSignature string `json:"lastVerifiedPinSignature,omitempty"`
	// LastVerificationStartTime is when the last verification, passed or failed, started.
	// +optional
	LastVerificationStartTime *metav1.Time `json:"lastVerificationStartTime,omitempty"`
	// Backups are the newest objects this backup holds (at most MaxStatusBackups),
	// newest first, updated after each backup and its retention.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Backups []StoredBackup `json:"backups,omitempty"`
	// Conditions (added by this operator).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackup takes one or periodic snapshots of an etcd cluster. Deleting it never deletes
// stored backups.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storageType`
// +kubebuilder:printcolumn:name="Succeeded",type=boolean,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.etcdRevision`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessDate`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec EtcdBackupSpec `json:"spec"`
	// Status reports the last backup. Always present in this version, with succeeded, as CoreOS
	// wrote it (defaulted: a read shows it before the first status write too).
	// +kubebuilder:default={}
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
