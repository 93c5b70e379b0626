package backup_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// TestAmbientCredentials: a store opened with Ambient signs with the process's own
// credentials, here the environment's; wrong ones are AccessDenied.
func TestAmbientCredentials(t *testing.T) {
	srv := miniotest.Start(t)
	srv.MakeBucket(t, "backups")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	open := func() *backup.S3 {
		s, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "backups", ForcePathStyle: true, Ambient: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	data := randomBytes(1<<20, 9)

	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	if _, err := open().Put(ctx, "ambient.db", bytes.NewReader(data), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readAll(t, open(), "ambient.db"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-"+srv.SecretKey)
	if _, err := open().Put(ctx, "denied.db", bytes.NewReader(data), backup.PutOptions{}); !errors.Is(err, backup.ErrAccessDenied) {
		t.Fatalf("wrong ambient keys: %v, want ErrAccessDenied", err)
	}

	if _, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "backups", Ambient: true,
		Credentials: backup.AWSCredentials{AccessKeyID: "a", SecretAccessKey: "b"}}); err == nil {
		t.Error("keys and ambient credentials at once accepted")
	}
}
