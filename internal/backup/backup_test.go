package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// s3Store starts a MinIO with a bucket and returns a store in it.
func s3Store(t *testing.T) (*backup.S3, *miniotest.Server) {
	t.Helper()
	srv := miniotest.Start(t)
	srv.MakeBucket(t, "backups")
	creds, err := backup.ParseAWSSecret(map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()),
		"config":      []byte(srv.AWSConfigFile()),
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "backups", ForcePathStyle: true,
		Credentials: creds, PartSize: 5 << 20, Parts: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

func fsStore(t *testing.T) *backup.FS {
	t.Helper()
	s, err := backup.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func readAll(t *testing.T, s backup.Store, key string) ([]byte, backup.Object, error) {
	t.Helper()
	rc, obj, err := s.Get(context.Background(), key)
	if err != nil {
		return nil, obj, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return b, obj, err
}

// forEachStore runs f against both implementations.
func forEachStore(t *testing.T, f func(t *testing.T, s backup.Store)) {
	t.Run("S3", func(t *testing.T) { s, _ := s3Store(t); f(t, s) })
	t.Run("FS", func(t *testing.T) { f(t, fsStore(t)) })
}

func TestRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, s backup.Store) {
		ctx := context.Background()
		// 13 MiB: three upload parts of 5 MiB on S3.
		data := randomBytes(13<<20, 1)
		for _, c := range []backup.Compression{backup.CompressionNone, backup.CompressionGzip} {
			key := "cluster/snap-" + string(c)
			obj, err := s.Put(ctx, key, bytes.NewReader(data), backup.PutOptions{Compression: c, Metadata: map[string]string{"etcd-revision": "42"}})
			if err != nil {
				t.Fatalf("put %s: %v", key, err)
			}
			got, gobj, err := readAll(t, s, key)
			if err != nil {
				t.Fatalf("get %s: %v", key, err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("%s: read %d bytes that differ from the %d written", key, len(got), len(data))
			}
			if gobj.SHA256 == "" || gobj.SHA256 != obj.SHA256 || gobj.Compression != c || gobj.Metadata["etcd-revision"] != "42" {
				t.Errorf("%s: put %+v, get %+v", key, obj, gobj)
			}
			if c == backup.CompressionNone {
				sum := sha256.Sum256(data)
				if obj.SHA256 != hex.EncodeToString(sum[:]) || obj.Size != int64(len(data)) {
					t.Errorf("checksum %s size %d, want the data's %x and %d", obj.SHA256, obj.Size, sum, len(data))
				}
			}
		}
		objs, err := s.List(ctx, "cluster/")
		if err != nil || len(objs) != 2 {
			t.Fatalf("list: %v %v (want exactly the 2 backups, no sidecars)", objs, err)
		}
		if err := s.Delete(ctx, "cluster/snap-"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readAll(t, s, "cluster/snap-"); !errors.Is(err, backup.ErrNotFound) {
			t.Fatalf("get after delete: %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "cluster/never-existed"); err != nil {
			t.Errorf("deleting a missing object: %v", err)
		}
	})
}

func TestRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, s backup.Store) {
		ctx := context.Background()
		base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		// Revision 9 is newer than revision 10 by time: order is by time, not by name.
		keys := []string{
			backup.PeriodicKey("etcd/c", 10, base),
			backup.PeriodicKey("etcd/c", 9, base.Add(time.Second)),
			backup.PeriodicKey("etcd/c", 12, base.Add(2*time.Second)),
			backup.PeriodicKey("etcd/c", 13, base.Add(3*time.Second)),
		}
		others := []string{"etcd/c", "etcd/c_v1_garbage", "etcd/cc_v1_2026-01-01-00:00:00", "etcd/c.bak"}
		for _, k := range append(append([]string{}, keys...), others...) {
			if _, err := s.Put(ctx, k, strings.NewReader(k), backup.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		latest, err := backup.Latest(ctx, s, "etcd/c")
		if err != nil || latest.Key != keys[3] {
			t.Fatalf("latest = %v, %v; want %s", latest.Key, err, keys[3])
		}
		deleted, err := backup.Retain(ctx, s, "etcd/c", backup.Retention{Keep: 2})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(deleted) != fmt.Sprint([]string{keys[1], keys[0]}) {
			t.Errorf("deleted %v, want the two oldest %v", deleted, keys[:2])
		}
		for _, k := range append([]string{keys[2], keys[3]}, others...) {
			if _, _, err := readAll(t, s, k); err != nil {
				t.Errorf("%s should survive retention: %v", k, err)
			}
		}
		if _, err := backup.Retain(ctx, s, "etcd/c", backup.Retention{}); err != nil {
			t.Fatal(err)
		}
		if ps, _ := backup.Periodic(ctx, s, "etcd/c"); len(ps) != 2 {
			t.Errorf("maxBackups 0 must keep all; have %d", len(ps))
		}
	})
}

// By age: what is older than MaxAge goes, the newest stays however old, and objects
// that are not this key's periodic backups are never looked at.
func TestRetentionByAge(t *testing.T) {
	forEachStore(t, func(t *testing.T, s backup.Store) {
		ctx := context.Background()
		now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
		put := func(k string) {
			t.Helper()
			if _, err := s.Put(ctx, k, strings.NewReader(k), backup.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		old1 := backup.PeriodicKey("etcd/c", 1, now.Add(-72*time.Hour))
		old2 := backup.PeriodicKey("etcd/c", 2, now.Add(-49*time.Hour))
		young := backup.PeriodicKey("etcd/c", 3, now.Add(-47*time.Hour))
		other := backup.PeriodicKey("etcd/other", 1, now.Add(-100*time.Hour))
		for _, k := range []string{old1, old2, young, other} {
			put(k)
		}
		deleted, err := backup.Retain(ctx, s, "etcd/c", backup.Retention{MaxAge: 48 * time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(deleted)
		if want := []string{old1, old2}; !slices.Equal(deleted, want) {
			t.Errorf("deleted %v, want %v", deleted, want)
		}
		// Only very old backups left: the newest of them is kept.
		deleted, err = backup.Retain(ctx, s, "etcd/c", backup.Retention{MaxAge: time.Hour, Now: now})
		if err != nil || len(deleted) != 0 {
			t.Errorf("with only the newest left: deleted %v, %v; want nothing", deleted, err)
		}
		if _, _, err := readAll(t, s, other); err != nil {
			t.Errorf("another key's backup touched: %v", err)
		}
	})
}

func TestPeriodicKey(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	k := backup.PeriodicKey("b/etcd.backup", 1234, at)
	if k != "b/etcd.backup_v1234_2026-01-02-02:04:05" {
		t.Fatalf("key %q", k)
	}
	rev, got, ok := backup.ParsePeriodicKey("b/etcd.backup", k)
	if !ok || rev != 1234 || !got.Equal(at) {
		t.Fatalf("parse: %d %v %v", rev, got, ok)
	}
	for _, bad := range []string{"b/etcd.backup", "b/etcd.backup_v_2026-01-02-02:04:05", "b/etcd.backup_v01_2026-01-02-02:04:05",
		"b/etcd.backup_v1_2026-01-02", "b/etcd.backupx_v1_2026-01-02-02:04:05", "b/etcd.backup_v-1_2026-01-02-02:04:05"} {
		if _, _, ok := backup.ParsePeriodicKey("b/etcd.backup", bad); ok {
			t.Errorf("%q parsed as a periodic backup", bad)
		}
	}
}

func TestCorruptedS3ObjectIsDetected(t *testing.T) {
	s, srv := s3Store(t)
	ctx := context.Background()
	data := randomBytes(1<<20, 2)
	obj, err := s.Put(ctx, "snap", bytes.NewReader(data), backup.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the bytes behind the store's back, keeping the recorded checksum: what
	// bit rot or a tampering writer would leave.
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0xff
	if _, err := srv.Client(t).PutObject(ctx, "backups", "snap", bytes.NewReader(bad), int64(len(bad)),
		minio.PutObjectOptions{UserMetadata: map[string]string{"sha256": obj.SHA256}}); err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(t, s, "snap")
	if !errors.Is(err, backup.ErrChecksumMismatch) {
		t.Fatalf("reading a corrupted object: %v, want ErrChecksumMismatch", err)
	}
}

func TestCorruptedFileIsDetected(t *testing.T) {
	dir := t.TempDir()
	s, _ := backup.NewFS(dir)
	ctx := context.Background()
	for _, c := range []backup.Compression{backup.CompressionNone, backup.CompressionGzip} {
		key := "x/snap" + string(c)
		if _, err := s.Put(ctx, key, bytes.NewReader(randomBytes(300<<10, 3)), backup.PutOptions{Compression: c}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, key)
		b, _ := os.ReadFile(p)
		b[len(b)-20] ^= 0x01
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readAll(t, s, key); !errors.Is(err, backup.ErrChecksumMismatch) {
			t.Errorf("%s: reading a corrupted file: %v, want ErrChecksumMismatch", key, err)
		}
	}
}

func TestS3Errors(t *testing.T) {
	s, srv := s3Store(t)
	ctx := context.Background()
	t.Run("wrong credentials", func(t *testing.T) {
		bad, _ := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "backups", ForcePathStyle: true,
			Credentials: backup.AWSCredentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "not-the-secret", Region: srv.Region}})
		_, err := bad.Put(ctx, "k", strings.NewReader("data"), backup.PutOptions{})
		if !errors.Is(err, backup.ErrAccessDenied) {
			t.Errorf("put: %v, want ErrAccessDenied", err)
		}
		if strings.Contains(fmt.Sprint(err), "not-the-secret") {
			t.Errorf("error reveals the secret: %v", err)
		}
		if _, err := bad.List(ctx, ""); !errors.Is(err, backup.ErrAccessDenied) {
			t.Errorf("list: %v, want ErrAccessDenied", err)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		nb, _ := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "nope", ForcePathStyle: true,
			Credentials: backup.AWSCredentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, Region: srv.Region}})
		if _, err := nb.Put(ctx, "k", strings.NewReader("data"), backup.PutOptions{}); !errors.Is(err, backup.ErrBucketNotFound) {
			t.Errorf("put: %v, want ErrBucketNotFound", err)
		}
		if _, err := nb.List(ctx, ""); !errors.Is(err, backup.ErrBucketNotFound) {
			t.Errorf("list: %v, want ErrBucketNotFound", err)
		}
	})
	t.Run("missing object", func(t *testing.T) {
		if _, _, err := s.Get(ctx, "absent"); !errors.Is(err, backup.ErrNotFound) {
			t.Errorf("get: %v, want ErrNotFound", err)
		}
	})
	t.Run("failed upload leaves nothing", func(t *testing.T) {
		_, err := s.Put(ctx, "partial", io.MultiReader(bytes.NewReader(randomBytes(6<<20, 4)), errReader{}), backup.PutOptions{})
		if err == nil {
			t.Fatal("put from a failing reader succeeded")
		}
		if objs, _ := s.List(ctx, "partial"); len(objs) != 0 {
			t.Errorf("a failed upload left %v", objs)
		}
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("snapshot stream broke") }

// TestS3UploadMemoryIsBounded streams 128 MiB and samples the heap: the upload must hold
// only its part buffers, not the object.
func TestS3UploadMemoryIsBounded(t *testing.T) {
	s, _ := s3Store(t) // 2 parts of 5 MiB
	const size = 128 << 20
	var obj backup.Object
	var err error
	growth := heapGrowthDuring(func() {
		obj, err = s.Put(context.Background(), "big", io.LimitReader(&pseudoRandom{r: rand.New(rand.NewPCG(5, 5))}, size), backup.PutOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size != size {
		t.Fatalf("stored %d bytes, want %d", obj.Size, size)
	}
	t.Logf("heap growth during a %d MiB upload: %.1f MiB", size>>20, float64(growth)/(1<<20))
	if growth > 48<<20 {
		t.Errorf("heap grew by %d MiB while uploading %d MiB: the upload is not streaming", growth>>20, size>>20)
	}
}

// heapGrowthDuring runs f and returns by how much the heap in use peaked above where it
// was before (sampled every 20 ms while f runs).
func heapGrowthDuring(f func()) int64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-sampled
	return int64(peak.Load()) - int64(base.HeapInuse)
}

type pseudoRandom struct{ r *rand.Rand }

func (p *pseudoRandom) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(p.r.Uint32())
	}
	return len(b), nil
}

func TestParseAWSSecret(t *testing.T) {
	good := map[string][]byte{
		"credentials": []byte("# comment\n[other]\naws_access_key_id = X\n\n[default]\naws_access_key_id = AKID\naws_secret_access_key = S3CR3T\naws_session_token=tok\n"),
		"config":      []byte("[profile other]\nregion = eu-west-1\n[default]\nregion = us-west-2\ns3 =\n  addressing_style = path\n"),
	}
	c, err := backup.ParseAWSSecret(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessKeyID != "AKID" || c.SecretAccessKey != "S3CR3T" || c.SessionToken != "tok" || c.Region != "us-west-2" {
		t.Errorf("parsed %#v", c)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", c, c, c, c); strings.Contains(s, "S3CR3T") || strings.Contains(s, "tok") {
		t.Errorf("formatting reveals the secret: %s", s)
	}
	for name, data := range map[string]map[string][]byte{
		"no credentials file": {"config": good["config"]},
		"no default profile":  {"credentials": []byte("[other]\naws_access_key_id = A\naws_secret_access_key = B\n")},
		"no secret key":       {"credentials": []byte("[default]\naws_access_key_id = A\n")},
		"garbage":             {"credentials": []byte("[default\nwhat")},
	} {
		_, err := backup.ParseAWSSecret(data)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, err = backup.ParseAWSSecret(map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = A\nthe-secret-line-without-equals\n")})
	if err == nil || strings.Contains(err.Error(), "the-secret") {
		t.Errorf("malformed line: %v (must fail without echoing the line)", err)
	}
}

// TestS3ChecksumObject: the checksum lives in <key>.sha256, which List hides and Delete
// removes with the backup; a backup whose checksum object is missing is refused.
func TestS3ChecksumObject(t *testing.T) {
	s, srv := s3Store(t)
	ctx := context.Background()
	obj, err := s.Put(ctx, "a/snap", bytes.NewReader(randomBytes(1<<20, 7)), backup.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc := srv.Client(t)
	o, err := mc.GetObject(ctx, "backups", "a/snap.sha256", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(o)
	o.Close()
	if err != nil || string(b) != obj.SHA256 {
		t.Fatalf("checksum object holds %q (%v), want %s", b, err, obj.SHA256)
	}
	if objs, err := s.List(ctx, "a/"); err != nil || len(objs) != 1 || objs[0].Key != "a/snap" {
		t.Errorf("list: %v (%v), want only a/snap", objs, err)
	}
	if _, err := s.Put(ctx, "x.sha256", strings.NewReader("x"), backup.PutOptions{}); err == nil {
		t.Error("a key naming a checksum object was accepted")
	}

	if err := mc.RemoveObject(ctx, "backups", "a/snap.sha256", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "a/snap"); !errors.Is(err, backup.ErrNoChecksum) {
		t.Errorf("get without its checksum object: %v, want ErrNoChecksum", err)
	}

	if _, err := s.Put(ctx, "a/snap", bytes.NewReader(randomBytes(1<<10, 8)), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a/snap"); err != nil {
		t.Fatal(err)
	}
	for o := range mc.ListObjects(ctx, "backups", minio.ListObjectsOptions{Prefix: "a/", Recursive: true}) {
		t.Errorf("left after Delete: %s (%v)", o.Key, o.Err)
	}
}
