package restore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// TestRestoreEncrypted: the restore step (and the operator's verification before it)
// reads an encrypted, compressed backup with its key, and refuses it without one,
// before writing anything.
func TestRestoreEncrypted(t *testing.T) {
	srv := miniotest.Start(t)
	srv.MakeBucket(t, "backups")
	creds, err := backup.ParseAWSSecret(map[string][]byte{"credentials": []byte(srv.AWSCredentialsFile())})
	if err != nil {
		t.Fatal(err)
	}
	key, err := backupcrypt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	open := func(k *backupcrypt.Key) backup.Store {
		s, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "backups", ForcePathStyle: true, Credentials: creds, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	if _, err := open(key).Put(ctx, "c/enc.db", bytes.NewReader(etcdtest.Snapshot(t, 20)), backup.PutOptions{Compression: backup.CompressionGzip}); err != nil {
		t.Fatal(err)
	}
	v, err := restore.CheckObject(ctx, open(key), "c/enc.db", t.TempDir())
	if err != nil || v.Status.TotalKey == 0 {
		t.Fatalf("verify with the key: %+v, %v", v.Status, err)
	}

	restoreWith := func(s backup.Store) (string, error) {
		dataDir := filepath.Join(t.TempDir(), "member")
		_, err := restore.Restore(ctx, restore.Options{Store: s, Key: "c/enc.db", SHA256: v.Pin,
			Name: "m0", DataDir: dataDir, PeerURLs: []string{"http://127.0.0.1:2380"}, InitialCluster: "m0=http://127.0.0.1:2380", InitialClusterToken: "t"})
		return dataDir, err
	}
	dir, err := restoreWith(open(nil))
	if !errors.Is(err, backup.ErrEncrypted) {
		t.Fatalf("restore without the key: %v, want ErrEncrypted", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("a refused restore left a data directory: %v", serr)
	}
	dir, err = restoreWith(open(key))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "member", "snap", "db")); err != nil {
		t.Errorf("restored data directory: %v", err)
	}
}
