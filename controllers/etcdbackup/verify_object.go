package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
)

// verifyListTimeout bounds the listing that picks the object to verify: the endpoint is
// the tenant's, and a hanging one must not hold a worker.
const verifyListTimeout = 20 * time.Second

// verifiedObjectS3 is spec.s3 narrowed to the exact object a verification restores: the
// newest object this EtcdBackup wrote (backupselect: named from its key and, by its
// metadata, not another EtcdBackup's). The pod is given that key, never told to pick the
// newest under the prefix itself: another EtcdBackup writing the same prefix would have
// its object verified and recorded as this one's lastVerifiedKey, which a total-loss
// restore prefers. The reason and message say why there is none.
func (r *Reconciler) verifiedObjectS3(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (*etcdv1beta2.S3BackupSource, string, string) {
	lctx, cancel := context.WithTimeout(ctx, verifyListTimeout)
	defer cancel()
	store, key, err := r.s3Store(lctx, eb)
	if err != nil {
		return nil, storeReason(err), fmt.Sprintf("no backup to verify: %v", err)
	}
	bucket, _, _ := cutBucket(eb.Spec.S3.Path)
	newest, err := backupselect.Newest(lctx, backupselect.Source{Store: store, Key: key, Namespace: eb.Namespace, Name: eb.Name}, 1)
	switch {
	case err != nil:
		return nil, storeReason(err), fmt.Sprintf("listing the backups of s3://%s/%s: %v", bucket, key, err)
	case len(newest) == 0:
		return nil, etcdv1beta2.ReasonNothingToVerify, fmt.Sprintf("no object under s3://%s/%s was written by this EtcdBackup", bucket, key)
	}
	s3 := *eb.Spec.S3
	s3.Path = bucket + "/" + newest[0].Key
	return &s3, "", ""
}

// storeReason is the reason an S3 failure is reported under: the one it carries, else
// the store's.
func storeReason(err error) string {
	if be, ok := errors.AsType[*backupstorage.Error](err); ok {
		return be.Reason
	}
	return backupstorage.Reason(err)
}
