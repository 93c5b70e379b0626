package etcdbackup

import (
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
)

// TestVerifiedFlagFollowsTheVerifiedObject: a verification flags only the entry of the
// object that passed (same key and revision), and a later listing keeps the flag for
// that object but not for a new object written under the same key.
func TestVerifiedFlagFollowsTheVerifiedObject(t *testing.T) {
	at := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	backups := []etcdv1beta2.StoredBackup{
		{Key: "db_v20_x", Revision: 20, SHA256: "b"},
		{Key: "db_v10_x", Revision: 10, SHA256: "a"},
		{Key: "once", Revision: 5, SHA256: "c"},
	}
	markVerified(backups, "db_v10_x", 10)
	markVerified(backups, "once", 4) // an older object under the same key verified
	if backups[0].Verified || !backups[1].Verified || backups[2].Verified {
		t.Fatalf("flags after verification: %+v", backups)
	}
	relisted := storedBackups([]backupselect.Entry{
		{Key: "db_v30_x", Revision: 30, SHA256: "d", Time: at},
		{Key: "db_v10_x", Revision: 10, SHA256: "a", Time: at},
	}, backups)
	if relisted[0].Verified || !relisted[1].Verified {
		t.Errorf("flags after relisting: %+v", relisted)
	}
}
