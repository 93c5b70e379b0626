package restore

import (
	"fmt"

	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
)

// A backup of a cluster with etcd auth holds its users, roles and "auth enabled": the
// verification member restored from it would refuse the check's reads, and the check
// has no credentials (it needs none: it runs on a throwaway copy in its own pod). So the
// verification copy has auth turned off before its member starts; the copy is deleted
// with the pod, the backup is untouched.

// disableAuth turns etcd auth off in the database of the restored data directory.
func disableAuth(dataDir string) (err error) {
	defer func() {
		if r := recover(); r != nil { // bbolt may fault on a damaged database
			err = fmt.Errorf("turning auth off in the restored copy: %v", r)
		}
	}()
	be := backend.NewDefaultBackend(zap.NewNop(), snapshotDB(dataDir), backend.WithMmapSize(0))
	defer be.Close()
	ab := schema.NewAuthBackend(zap.NewNop(), be)
	tx := ab.BatchTx()
	tx.Lock()
	if tx.UnsafeReadAuthEnabled() {
		tx.UnsafeSaveAuthEnabled(false)
	}
	tx.Unlock()
	be.ForceCommit()
	return nil
}
