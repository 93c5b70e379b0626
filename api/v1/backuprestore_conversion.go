package v1

import "github.com/etcd-operator/etcd-operator/api/v1beta2"

// backupRestoreToHub and backupRestoreFromHub copy status.backupRestore field by field:
// the two versions hold the same record.
func backupRestoreToHub(b *BackupRestoreStatus) *v1beta2.BackupRestoreStatus {
	if b == nil {
		return nil
	}
	return &v1beta2.BackupRestoreStatus{
		Backup: b.Backup, BackupUID: b.BackupUID, Path: b.Path, SHA256: b.SHA256, Revision: b.Revision,
		Member: b.Member, Token: b.Token, StartedAt: b.StartedAt, FinishedAt: b.FinishedAt.DeepCopy(),
	}
}

func backupRestoreFromHub(b *v1beta2.BackupRestoreStatus) *BackupRestoreStatus {
	if b == nil {
		return nil
	}
	return &BackupRestoreStatus{
		Backup: b.Backup, BackupUID: b.BackupUID, Path: b.Path, SHA256: b.SHA256, Revision: b.Revision,
		Member: b.Member, Token: b.Token, StartedAt: b.StartedAt, FinishedAt: b.FinishedAt.DeepCopy(),
	}
}
