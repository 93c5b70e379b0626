package restore

import (
	"context"
	"errors"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
)

// CheckSnapshot is what a snapshot check pod runs (`verify snapshot`): CheckObject of
// the object at key, downloaded into dir, reported as a result whose Reason is the one an
// EtcdRestore of that object reports (empty when it passed). A passed result carries the
// key, the SHA-256 of the bytes checked (CheckedObject.Pin) and the snapshot's revision and
// key count; the operator acts on the SHA-256 only after hashing the object itself.
func CheckSnapshot(ctx context.Context, s backup.Store, key, dir string) CheckResult {
	v, err := CheckObject(ctx, s, key, dir)
	if err != nil {
		return CheckResult{Key: key, Reason: snapshotCheckReason(err), Error: err.Error()}
	}
	return CheckResult{Key: key, SHA256: v.Pin, Revision: v.Status.Revision, KeyCount: int64(v.Status.TotalKey)}
}

// snapshotCheckReason names what a failed check found.
func snapshotCheckReason(err error) string {
	switch {
	case errors.Is(err, backup.ErrNotFound):
		return etcdv1beta2.ReasonBackupNotFound
	case errors.Is(err, backup.ErrChecksumMismatch):
		return etcdv1beta2.ReasonChecksumMismatch
	case errors.Is(err, ErrNotRestorable):
		return etcdv1beta2.ReasonInvalidSnapshot
	}
	return backupstorage.Reason(err)
}
