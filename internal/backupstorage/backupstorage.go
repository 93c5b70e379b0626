// Package backupstorage opens the storage an EtcdBackup or EtcdRestore names and says,
// as a condition reason, what went wrong there. Both controllers report storage failures
// alike (an EtcdRestore's SecretError means what an EtcdBackup's does), so the reasons
// are decided here, once.
package backupstorage

import (
	"context"
	"errors"
	"fmt"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

// Error is a failure with the condition reason to report it under (one of the
// etcdv1beta2 backup and restore reasons).
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Reason is the condition reason of a failure of the store itself.
func Reason(err error) string {
	switch {
	case errors.Is(err, backup.ErrAccessDenied):
		return etcdv1beta2.ReasonAccessDenied
	case errors.Is(err, backup.ErrBucketNotFound):
		return etcdv1beta2.ReasonBucketNotFound
	case errors.Is(err, backup.ErrEncrypted), errors.Is(err, backup.ErrWrongKey), errors.Is(err, backup.ErrNotEncrypted):
		return etcdv1beta2.ReasonEncryptionKeyError
	case errors.Is(err, backupcrypt.ErrMisplaced), errors.Is(err, backupcrypt.ErrUnbound):
		return etcdv1beta2.ReasonBackupMisplaced
	case errors.Is(err, backupcrypt.ErrCorrupted):
		return etcdv1beta2.ReasonInvalidSnapshot
	case errors.Is(err, backup.ErrEndpointRefused):
		return etcdv1beta2.ReasonS3EndpointRefused
	case errors.Is(err, backup.ErrLimitExceeded):
		return etcdv1beta2.ReasonLimitExceeded
	case errors.Is(err, backup.ErrStalled), errors.Is(err, context.DeadlineExceeded):
		return etcdv1beta2.ReasonTimeout
	default:
		return etcdv1beta2.ReasonStorageError
	}
}

// CheckS3Source finds what no retry can fix in an S3 source; field is the spec field
// that chose S3 (storageType or backupStorageType).
func CheckS3Source(s3 *etcdv1beta2.S3BackupSource, field string) (reason, msg string) {
	if s3 == nil {
		return etcdv1beta2.ReasonBackupInvalidSpec, field + " S3 needs spec.s3"
	}
	if _, _, err := backup.SplitS3Path(s3.Path); err != nil {
		return etcdv1beta2.ReasonBackupInvalidSpec, err.Error()
	}
	switch {
	case s3.CredentialsSource == etcdv1beta2.S3CredentialsEnvironment && s3.AWSSecret != "":
		return etcdv1beta2.ReasonBackupInvalidSpec, "spec.s3.credentialsSource Environment takes no spec.s3.awsSecret"
	case s3.CredentialsSource == etcdv1beta2.S3CredentialsEnvironment:
	case s3.AWSSecret == "":
		return etcdv1beta2.ReasonBackupInvalidSpec, "spec.s3.awsSecret is empty (or set spec.s3.credentialsSource Environment)"
	}
	return "", ""
}

// UnsupportedProvider explains the CoreOS storage types kept only for compatibility.
func UnsupportedProvider(t etcdv1beta2.BackupStorageType) (reason, msg string) {
	return etcdv1beta2.ReasonUnsupportedStorageType, fmt.Sprintf("unsupported storage type %s, use S3 with the provider's S3-compatible endpoint (spec.s3.endpoint)", t)
}
