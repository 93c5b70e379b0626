package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// storeWithKey opens another store on srv's bucket "backups" with key (nil: none).
func storeWithKey(t *testing.T, srv *miniotest.Server, key *backupcrypt.Key) *backup.S3 {
	t.Helper()
	return storeFor(t, srv, key, "", "")
}

// storeFor is storeWithKey for the objects of the EtcdBackup namespace/name.
func storeFor(t *testing.T, srv *miniotest.Server, key *backupcrypt.Key, namespace, name string) *backup.S3 {
	t.Helper()
	creds, err := backup.ParseAWSSecret(map[string][]byte{"credentials": []byte(srv.AWSCredentialsFile())})
	if err != nil {
		t.Fatal(err)
	}
	s, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "backups", ForcePathStyle: true,
		Credentials: creds, PartSize: 5 << 20, Parts: 2, Key: key, Namespace: namespace, Backup: name})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newKey(t *testing.T) *backupcrypt.Key {
	t.Helper()
	k, err := backupcrypt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rawObject reads the stored bytes as anyone with access to the bucket would.
func rawObject(t *testing.T, srv *miniotest.Server, key string) []byte {
	t.Helper()
	o, err := srv.Client(t).GetObject(context.Background(), "backups", key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncryptedObjects(t *testing.T) {
	_, srv := s3Store(t)
	key, other := newKey(t), newKey(t)
	enc, plain, wrong := storeWithKey(t, srv, key), storeWithKey(t, srv, nil), storeWithKey(t, srv, other)
	ctx := context.Background()
	// Compressible, recognisable data: what a bucket reader must not see.
	data := bytes.Repeat([]byte("secret-value-0123456789;"), 300_000) // 7.2 MB, two upload parts

	for _, c := range []backup.Compression{backup.CompressionNone, backup.CompressionGzip} {
		name := "enc-" + string(c)
		obj, err := enc.Put(ctx, name, bytes.NewReader(data), backup.PutOptions{Compression: c, Metadata: map[string]string{"etcd-revision": "7"}})
		if err != nil {
			t.Fatal(err)
		}
		if obj.Encryption != backupcrypt.Algorithm || obj.KeyFingerprint != key.Fingerprint() {
			t.Errorf("%s: Put returned encryption %q key %q", name, obj.Encryption, obj.KeyFingerprint)
		}
		raw := rawObject(t, srv, name)
		if bytes.Contains(raw, []byte("secret-value")) {
			t.Fatalf("%s: the stored object contains the plaintext", name)
		}
		got, gobj, err := readAll(t, enc, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes back, want %d", name, len(got), len(data))
		}
		if gobj.KeyFingerprint != key.Fingerprint() || gobj.Metadata["etcd-revision"] != "7" || gobj.Metadata["encryption"] != "" {
			t.Errorf("%s: Get returned %+v", name, gobj)
		}
		if _, _, err := plain.Get(ctx, name); !errors.Is(err, backup.ErrEncrypted) {
			t.Errorf("%s without a key: error %v, want ErrEncrypted", name, err)
		}
		_, _, err = wrong.Get(ctx, name)
		if !errors.Is(err, backup.ErrWrongKey) || !strings.Contains(err.Error(), key.Fingerprint()) || !strings.Contains(err.Error(), other.Fingerprint()) {
			t.Errorf("%s with another key: error %v, want ErrWrongKey naming both fingerprints", name, err)
		}
	}

	// With a key, a plain object (which anyone who may write to the bucket can store) is refused.
	if _, err := plain.Put(ctx, "plain", bytes.NewReader(data), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := enc.Get(ctx, "plain"); !errors.Is(err, backup.ErrNotEncrypted) {
		t.Errorf("plain object with a key: error %v, want ErrNotEncrypted", err)
	}
}

// TestEncryptedObjectDamage: a changed stored byte is a checksum mismatch (the SHA-256
// covers the encrypted bytes); a replaced object with a matching checksum (someone who
// may write the bucket) fails the key's authentication.
func TestEncryptedObjectDamage(t *testing.T) {
	_, srv := s3Store(t)
	key := newKey(t)
	enc := storeWithKey(t, srv, key)
	ctx := context.Background()
	data := randomBytes(3<<20, 5)
	if _, err := enc.Put(ctx, "b", bytes.NewReader(data), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := rawObject(t, srv, "b")
	st, err := srv.Client(t).StatObject(ctx, "backups", "b", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replace := func(b []byte, sum string) {
		t.Helper()
		if _, err := srv.Client(t).PutObject(ctx, "backups", "b", bytes.NewReader(b), int64(len(b)),
			minio.PutObjectOptions{UserMetadata: st.UserMetadata}); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client(t).PutObject(ctx, "backups", "b.sha256", strings.NewReader(sum), int64(len(sum)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(b []byte) string { return hexSHA256(b) }

	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 1
	replace(flipped, sum(raw))
	if _, _, err := readAll(t, enc, "b"); !errors.Is(err, backup.ErrChecksumMismatch) {
		t.Errorf("flipped byte: error %v, want ErrChecksumMismatch", err)
	}
	replace(flipped, sum(flipped))
	if _, _, err := readAll(t, enc, "b"); !errors.Is(err, backupcrypt.ErrCorrupted) {
		t.Errorf("flipped byte, checksum forged: error %v, want backupcrypt.ErrCorrupted", err)
	}
	cut := raw[:len(raw)-100]
	replace(cut, sum(cut))
	if _, _, err := readAll(t, enc, "b"); !errors.Is(err, backupcrypt.ErrCorrupted) {
		t.Errorf("truncated, checksum forged: error %v, want backupcrypt.ErrCorrupted", err)
	}
}

func hexSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestEncryptedObjectsAreBound: an encrypted object is bound to its namespace, EtcdBackup,
// key and revision. Copied (with its checksum and metadata) to another key or another
// backup's prefix, read by another namespace's store, or an older object put back under
// a newer one's key, it is refused with ErrMisplaced naming what differs, before
// anything is decrypted; read where it belongs, it decrypts.
func TestEncryptedObjectsAreBound(t *testing.T) {
	_, srv := s3Store(t)
	key := newKey(t)
	ctx := context.Background()
	nightly := storeFor(t, srv, key, "tenant-b", "nightly")
	md := func(rev string) map[string]string {
		return map[string]string{"etcd-backup-namespace": "tenant-b", "etcd-backup-name": "nightly", "etcd-revision": rev}
	}
	older, newer := randomBytes(40_000, 1), randomBytes(40_000, 2)
	if _, err := nightly.Put(ctx, "b/nightly-old", bytes.NewReader(older), backup.PutOptions{Metadata: md("10")}); err != nil {
		t.Fatal(err)
	}
	if _, err := nightly.Put(ctx, "b/nightly", bytes.NewReader(newer), backup.PutOptions{Metadata: md("20")}); err != nil {
		t.Fatal(err)
	}
	// Where it belongs, with the revision the reader expects.
	rc, _, err := nightly.Get(backup.ExpectRevision(ctx, 20), "b/nightly")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, newer) {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}

	// copyObject copies the stored bytes, metadata and checksum as a bucket writer can.
	copyObject := func(from, to string) {
		t.Helper()
		st, err := srv.Client(t).StatObject(ctx, "backups", from, minio.StatObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"", ".sha256"} {
			b := rawObject(t, srv, from+suffix)
			opts := minio.PutObjectOptions{}
			if suffix == "" {
				opts.UserMetadata = st.UserMetadata
			}
			if _, err := srv.Client(t).PutObject(ctx, "backups", to+suffix, bytes.NewReader(b), int64(len(b)), opts); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyObject("b/nightly", "b/hourly")
	hourly := storeFor(t, srv, key, "tenant-b", "hourly")
	if _, _, err := hourly.Get(ctx, "b/hourly"); !errors.Is(err, backupcrypt.ErrMisplaced) || !strings.Contains(err.Error(), `EtcdBackup "nightly", not "hourly"`) {
		t.Errorf("copied to another backup's prefix: error %v, want ErrMisplaced naming the backups", err)
	}
	if _, _, err := nightly.Get(ctx, "b/hourly"); !errors.Is(err, backupcrypt.ErrMisplaced) || !strings.Contains(err.Error(), `key "b/nightly", not "b/hourly"`) {
		t.Errorf("copied to another key: error %v, want ErrMisplaced naming the keys", err)
	}
	if _, _, err := storeFor(t, srv, key, "tenant-a", "").Get(ctx, "b/nightly"); !errors.Is(err, backupcrypt.ErrMisplaced) || !strings.Contains(err.Error(), `namespace "tenant-b", not "tenant-a"`) {
		t.Errorf("read from another namespace: error %v, want ErrMisplaced naming the namespaces", err)
	}
	// Rolled back: the older object (bound to its own key) cannot stand in for the newer
	// one, and an older object written under the same key is refused for its revision.
	copyObject("b/nightly-old", "b/nightly")
	if _, _, err := nightly.Get(backup.ExpectRevision(ctx, 20), "b/nightly"); !errors.Is(err, backupcrypt.ErrMisplaced) {
		t.Errorf("older object put back: error %v, want ErrMisplaced", err)
	}
	if _, err := nightly.Put(ctx, "b/nightly", bytes.NewReader(older), backup.PutOptions{Metadata: md("10")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nightly.Get(backup.ExpectRevision(ctx, 20), "b/nightly"); !errors.Is(err, backupcrypt.ErrMisplaced) || !strings.Contains(err.Error(), "revision 10, not 20") {
		t.Errorf("older revision under the key: error %v, want ErrMisplaced naming the revisions", err)
	}
}

// TestVersion1ObjectsStillDecrypt: an object stored by the version 1 encoder (no
// binding; testdata of package backupcrypt, key 00 01 .. 1f) still restores.
func TestVersion1ObjectsStillDecrypt(t *testing.T) {
	_, srv := s3Store(t)
	v1, err := os.ReadFile("../backupcrypt/testdata/v1.enc")
	if err != nil {
		t.Fatal(err)
	}
	kb := make([]byte, backupcrypt.KeySize)
	for i := range kb {
		kb[i] = byte(i)
	}
	key, err := backupcrypt.ParseKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	meta := map[string]string{"encryption": backupcrypt.AlgorithmV1, "encryption-key-fingerprint": key.Fingerprint(), "checksum": "sidecar", "etcd-revision": "5"}
	if _, err := srv.Client(t).PutObject(ctx, "backups", "old/v1", bytes.NewReader(v1), int64(len(v1)), minio.PutObjectOptions{UserMetadata: meta}); err != nil {
		t.Fatal(err)
	}
	sum := hexSHA256(v1)
	if _, err := srv.Client(t).PutObject(ctx, "backups", "old/v1.sha256", strings.NewReader(sum), int64(len(sum)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	got, obj, err := readAll(t, storeFor(t, srv, key, "tenant-b", "nightly"), "old/v1")
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat([]byte("etcd-operator v1 fixture;"), 120); !bytes.Equal(got, want) || obj.Encryption != backupcrypt.AlgorithmV1 {
		t.Errorf("version 1 object: %d bytes, encryption %q", len(got), obj.Encryption)
	}
}
