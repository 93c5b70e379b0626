package backupstorage

import (
	"errors"
	"fmt"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

func TestReason(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("put: %w", backup.ErrAccessDenied):   etcdv1beta2.ReasonAccessDenied,
		fmt.Errorf("put: %w", backup.ErrBucketNotFound): etcdv1beta2.ReasonBucketNotFound,
		errors.New("connection reset"):                  etcdv1beta2.ReasonStorageError,
	} {
		if got := Reason(err); got != want {
			t.Errorf("Reason(%v) = %s, want %s", err, got, want)
		}
	}
}

func TestErrorKeepsItsCause(t *testing.T) {
	cause := errors.New("boom")
	err := error(&Error{etcdv1beta2.ReasonTimeout, cause})
	if !errors.Is(err, cause) || err.Error() != "Timeout: boom" {
		t.Fatalf("got %q, is cause %v", err, errors.Is(err, cause))
	}
}

func TestCheckS3Source(t *testing.T) {
	for _, tc := range []struct {
		s3         *etcdv1beta2.S3BackupSource
		wantReason string
	}{
		{nil, etcdv1beta2.ReasonBackupInvalidSpec},
		{&etcdv1beta2.S3BackupSource{Path: "no-key", AWSSecret: "aws"}, etcdv1beta2.ReasonBackupInvalidSpec},
		{&etcdv1beta2.S3BackupSource{Path: "bucket/key"}, etcdv1beta2.ReasonBackupInvalidSpec},
		{&etcdv1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: "aws"}, ""},
	} {
		if reason, msg := CheckS3Source(tc.s3, "storageType"); reason != tc.wantReason {
			t.Errorf("CheckS3Source(%+v) = %s %q, want reason %q", tc.s3, reason, msg, tc.wantReason)
		}
	}
	if reason, _ := UnsupportedProvider(etcdv1beta2.BackupStorageTypeGCS); reason != etcdv1beta2.ReasonUnsupportedStorageType {
		t.Errorf("UnsupportedProvider: reason %s", reason)
	}
}
