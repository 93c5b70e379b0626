package backupstorage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// OpenS3 reads the awsSecret of s (through c: the operator reads Secrets uncached) and
// opens the bucket. Errors name the Secret, never its contents.
func OpenS3(ctx context.Context, c client.Reader, namespace string, s *etcdv1beta2.S3BackupSource, bucket string) (backup.Store, error) {
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.AWSSecret}, &sec); err != nil {
		return nil, &Error{etcdv1beta2.ReasonSecretError, fmt.Errorf("read awsSecret %s/%s: %w", namespace, s.AWSSecret, err)}
	}
	creds, err := backup.ParseAWSSecret(sec.Data)
	if err != nil {
		return nil, &Error{etcdv1beta2.ReasonSecretError, fmt.Errorf("awsSecret %s/%s: %w", namespace, s.AWSSecret, err)}
	}
	store, err := backup.NewS3(backup.S3Config{Endpoint: s.Endpoint, Bucket: bucket, ForcePathStyle: s.ForcePathStyle, Credentials: creds})
	if err != nil {
		return nil, &Error{etcdv1beta2.ReasonBackupInvalidSpec, err}
	}
	return store, nil
}
