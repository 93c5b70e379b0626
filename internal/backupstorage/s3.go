package backupstorage

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// OpenS3 opens s's bucket as an operator that lends no identity of its own (S3Access's
// zero value): see S3Access.Open.
func OpenS3(ctx context.Context, c client.Reader, namespace string, s *etcdv1beta2.S3BackupSource, bucket string) (backup.Store, error) {
	return S3Access{}.Open(ctx, c, namespace, s, bucket)
}
