package restore

import (
	"context"
	"errors"
	"fmt"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
)

// CheckSnapshot is what a snapshot check pod runs (`verify snapshot`): CheckObject of
// the object at key, downloaded into dir, reported as a result whose Reason is the one an
// EtcdRestore of that object reports (empty when it passed). A passed result carries the
// key, the SHA-256 of the bytes checked (CheckedObject.Pin) and the snapshot's revision and
// key count; the operator acts on the SHA-256 only after hashing the object itself.
//
// It ends when ctx does, with a VerificationFailed result, even while the check itself
// goes on: bbolt reads a tenant's bytes without looking at ctx, and some malformed pages
// kept it busy past any bound (FuzzCheckSnapshot, seed "an element's position beyond its
// page", once in CI: no end within a minute). The check is left running: its process (a
// check pod, `verify snapshot`) exits after reporting.
func CheckSnapshot(ctx context.Context, s backup.Store, key, dir string) CheckResult {
	done := make(chan CheckResult, 1)
	go func() { done <- checkSnapshot(ctx, s, key, dir) }()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		return CheckResult{Key: key, Reason: etcdv1beta2.ReasonVerificationFailed,
			Error: fmt.Sprintf("the check did not end in its time: %v", context.Cause(ctx))}
	}
}

// checkSnapshot is CheckSnapshot's check, without its bound in time.
func checkSnapshot(ctx context.Context, s backup.Store, key, dir string) CheckResult {
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
