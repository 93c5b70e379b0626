package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackupRestoreStatus records a restore from backup after total loss (see v1beta2's
// BackupRestoreStatus; opted into with the annotation
// etcd.database.coreos.com/allow-restore-from-backup, the same in both versions).
type BackupRestoreStatus struct {
	// Backup is the EtcdBackup (same namespace) whose object was restored.
	Backup string `json:"backup"`
	// BackupUID is that EtcdBackup's UID.
	BackupUID string `json:"backupUID"`
	// Path is the restored object, "<bucket>/<key>".
	Path string `json:"path"`
	// SHA256 pins the object's content.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// Revision is the etcd revision the backup holds; writes after it are gone.
	Revision int64 `json:"revision"`
	// Member is the restored cluster's first member (and its pod).
	Member string `json:"member"`
	// Token is the restored cluster's --initial-cluster-token.
	Token string `json:"token"`
	// StartedAt is when the restore was decided.
	StartedAt metav1.Time `json:"startedAt"`
	// FinishedAt is when the restored member served; unset while in progress.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}
