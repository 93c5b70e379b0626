package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// AnnotationAllowRestoreFromBackup opts a cluster into recovery from total loss: once
// every member's data is provably gone (no member answers, no member pod and no member
// claim exists, for the quorum-loss grace), the cluster is restored in place, under the
// same name and Services, from the newest restorable backup of an EtcdBackup of its
// namespace that targets it. "true" accepts any such EtcdBackup; any other value names
// the one to use. Writes after the backup's revision are lost, which is why it is opt-in.
const AnnotationAllowRestoreFromBackup = "etcd.database.coreos.com/allow-restore-from-backup"

// BackupRestoreStatus records a restore from backup after total loss. It is written
// before the restored member's pod is created (so a restarted operator continues the
// same restore) and kept once the restore has finished, saying what the cluster's data
// came from.
type BackupRestoreStatus struct {
	// Backup is the EtcdBackup (same namespace) whose object was restored.
	Backup string `json:"backup"`
	// BackupUID is that EtcdBackup's UID: the record is honoured only while that very
	// object exists and still targets this cluster.
	BackupUID string `json:"backupUID"`
	// Path is the restored object, "<bucket>/<key>".
	Path string `json:"path"`
	// SHA256 pins the object's content (its stored checksum, or what the operator read
	// when it verified the object).
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// Revision is the etcd revision the backup holds; writes after it are gone.
	Revision int64 `json:"revision"`
	// Member is the restored cluster's first member (and its pod).
	Member string `json:"member"`
	// Token is the restored cluster's --initial-cluster-token; the member's pod carries it
	// as its marker while the restore is in progress.
	Token string `json:"token"`
	// StartedAt is when the restore was decided.
	StartedAt metav1.Time `json:"startedAt"`
	// FinishedAt is when the restored member served; unset while the restore is in
	// progress.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// InProgress reports whether the recorded restore has not finished yet.
func (b *BackupRestoreStatus) InProgress() bool { return b != nil && b.FinishedAt == nil }
