package backupstorage

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// S3Access is what the operator lets an EtcdBackup or EtcdRestore use to reach S3 from
// the operator's own process.
type S3Access struct {
	// AllowAmbient lets credentialsSource Environment use the operator's own identity
	// (its environment, web identity token, instance role): --allow-ambient-s3-credentials.
	// Off, a tenant could otherwise read and write whatever the operator may.
	AllowAmbient bool
	// AllowEndpoints are the endpoints (host or host:port, as spec.s3.endpoint writes
	// them) dialled although they are loopback, link-local or the API server's:
	// --allow-s3-endpoint. Every other endpoint is checked, as it is dialled, against
	// those addresses (backup.Egress).
	AllowEndpoints []string
	// DenyAddrs are refused like loopback: the Kubernetes API server's addresses.
	DenyAddrs []netip.Addr
	// MaxObjectBytes bounds a backup read in the operator's process (and what it
	// decompresses to); 0: backup.DefaultMaxObjectBytes. See backup.OperatorLimits.
	MaxObjectBytes int64
}

// config is what every store opened for a tenant gets from the operator: the address
// check and the limits of its own process.
func (a S3Access) config(cfg *backup.S3Config) {
	cfg.Egress = &backup.Egress{Allow: a.AllowEndpoints, Deny: a.DenyAddrs}
	cfg.Limits = backup.OperatorLimits(a.MaxObjectBytes)
}

// Open opens the bucket of s with the credentials it names (read through c: the operator
// reads Secrets uncached) and, with spec.s3.encryptionKeySecret, its encryption key.
// Errors name Secrets and fields, never their contents.
// Encrypted objects are expected to belong to namespace (see backup.S3Config.Namespace).
func (a S3Access) Open(ctx context.Context, c client.Reader, namespace string, s *etcdv1beta2.S3BackupSource, bucket string) (backup.Store, error) {
	return a.OpenFor(ctx, c, namespace, "", s, bucket)
}

// OpenFor is Open for the objects of the EtcdBackup namespace/backupName: encrypted
// objects bound to another EtcdBackup are refused (see backup.S3Config.Backup).
func (a S3Access) OpenFor(ctx context.Context, c client.Reader, namespace, backupName string, s *etcdv1beta2.S3BackupSource, bucket string) (backup.Store, error) {
	cfg := backup.S3Config{Endpoint: s.Endpoint, Bucket: bucket, ForcePathStyle: s.ForcePathStyle, Namespace: namespace, Backup: backupName}
	if s.CredentialsSource == etcdv1beta2.S3CredentialsEnvironment {
		if !a.AllowAmbient {
			return nil, &Error{etcdv1beta2.ReasonAmbientCredentialsRefused, fmt.Errorf(
				"spec.s3.credentialsSource Environment would use the operator's own S3 identity, which this operator does not lend (it runs without --allow-ambient-s3-credentials); name a Secret in spec.s3.awsSecret")}
		}
		cfg.Ambient = true
	} else {
		creds, err := readAWSSecret(ctx, c, namespace, s.AWSSecret)
		if err != nil {
			return nil, err
		}
		cfg.Credentials = creds
	}
	if s.EncryptionKeySecret != "" {
		key, err := ReadEncryptionKey(ctx, c, namespace, s.EncryptionKeySecret)
		if err != nil {
			return nil, err
		}
		cfg.Key = key
	}
	a.config(&cfg)
	store, err := backup.NewS3(cfg)
	if errors.Is(err, backup.ErrEndpointRefused) {
		return nil, &Error{etcdv1beta2.ReasonS3EndpointRefused, fmt.Errorf("spec.s3.endpoint: %w", err)}
	}
	if err != nil {
		return nil, &Error{etcdv1beta2.ReasonBackupInvalidSpec, err}
	}
	return store, nil
}

func readAWSSecret(ctx context.Context, c client.Reader, namespace, name string) (backup.AWSCredentials, error) {
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sec); err != nil {
		return backup.AWSCredentials{}, &Error{etcdv1beta2.ReasonSecretError, fmt.Errorf("read awsSecret %s/%s: %w", namespace, name, err)}
	}
	creds, err := backup.ParseAWSSecret(sec.Data)
	if err != nil {
		return backup.AWSCredentials{}, &Error{etcdv1beta2.ReasonSecretError, fmt.Errorf("awsSecret %s/%s: %w", namespace, name, err)}
	}
	return creds, nil
}

// ReadEncryptionKey reads the key of spec.s3.encryptionKeySecret (its key "key"). Errors
// have reason EncryptionKeyError and name the Secret, never the key.
func ReadEncryptionKey(ctx context.Context, c client.Reader, namespace, name string) (*backupcrypt.Key, error) {
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sec); err != nil {
		return nil, &Error{etcdv1beta2.ReasonEncryptionKeyError, fmt.Errorf("read spec.s3.encryptionKeySecret %s/%s: %w", namespace, name, err)}
	}
	data, ok := sec.Data[etcdv1beta2.EncryptionKeySecretKey]
	if !ok {
		return nil, &Error{etcdv1beta2.ReasonEncryptionKeyError, fmt.Errorf("spec.s3.encryptionKeySecret %s/%s has no key %q", namespace, name, etcdv1beta2.EncryptionKeySecretKey)}
	}
	key, err := backupcrypt.ParseKey(data)
	if err != nil {
		return nil, &Error{etcdv1beta2.ReasonEncryptionKeyError, fmt.Errorf("spec.s3.encryptionKeySecret %s/%s, key %q: %w", namespace, name, etcdv1beta2.EncryptionKeySecretKey, err)}
	}
	return key, nil
}
