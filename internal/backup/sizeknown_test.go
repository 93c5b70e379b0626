package backup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// etag is the ETag MinIO reports for the object: "<md5>" for one PUT, "<md5>-<parts>"
// for a multipart upload.
func etag(t *testing.T, mc *minio.Client, key string) string {
	t.Helper()
	st, err := mc.StatObject(context.Background(), "backups", key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st.ETag
}

// TestS3PutOfKnownSize: with the length announced, plain and encrypted objects go as
// one PUT (not in parts) and read back verified; without it, or compressed, in parts.
func TestS3PutOfKnownSize(t *testing.T) {
	s, srv := s3Store(t)
	mc := srv.Client(t)
	ctx := context.Background()
	data := randomBytes(13<<20, 11) // more than two 5 MiB parts
	for name, st := range map[string]*backup.S3{"plain": s, "encrypted": storeWithKey(t, srv, newKey(t))} {
		for _, tc := range []struct {
			opts      backup.PutOptions
			multipart bool
		}{
			{opts: backup.PutOptions{Size: int64(len(data))}},
			{opts: backup.PutOptions{}, multipart: true},
			{opts: backup.PutOptions{Size: int64(len(data)), Compression: backup.CompressionGzip}, multipart: true},
		} {
			key := name + "/snap-" + string(tc.opts.Compression)
			if tc.opts.Size == 0 {
				key += "-unknown"
			}
			obj, err := st.Put(ctx, key, bytes.NewReader(data), tc.opts)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if got := strings.Contains(etag(t, mc, key), "-"); got != tc.multipart {
				t.Errorf("%s: uploaded in parts: %v, want %v", key, got, tc.multipart)
			}
			b, gobj, err := readAll(t, st, key)
			if err != nil || !bytes.Equal(b, data) || gobj.SHA256 != obj.SHA256 {
				t.Errorf("%s: read %d bytes (%v), checksum %s, put %s", key, len(b), err, gobj.SHA256, obj.SHA256)
			}
		}
	}
}

// TestS3PutOfWrongSize: a reader shorter or longer than announced fails the Put, an
// earlier backup under the key stays readable or is refused, and no read ever returns
// other bytes without an error.
func TestS3PutOfWrongSize(t *testing.T) {
	s, _ := s3Store(t)
	ctx := context.Background()
	old := randomBytes(3<<20, 12)
	data := randomBytes(3<<20, 13)
	for name, announced := range map[string]int64{"short": int64(len(data)) + 1, "long": int64(len(data)) - 1} {
		t.Run(name, func(t *testing.T) {
			key := "wrong/" + name
			if _, err := s.Put(ctx, key, bytes.NewReader(old), backup.PutOptions{Size: int64(len(old))}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Put(ctx, key, bytes.NewReader(data), backup.PutOptions{Size: announced}); err == nil {
				t.Fatalf("a %d-byte reader announced as %d bytes was stored", len(data), announced)
			}
			b, _, err := readAll(t, s, key)
			switch {
			case err == nil && !bytes.Equal(b, old):
				t.Errorf("read %d bytes without error that are not the earlier backup", len(b))
			case err != nil && !errors.Is(err, backup.ErrChecksumMismatch) && !errors.Is(err, backup.ErrNoChecksum):
				t.Errorf("read: %v", err)
			}
		})
	}
}

// TestS3UploadOfKnownSizeHoldsNoParts streams 128 MiB of announced length: the heap
// grows by less than the two 5 MiB part buffers an upload of unknown length holds.
func TestS3UploadOfKnownSizeHoldsNoParts(t *testing.T) {
	s, _ := s3Store(t)
	const size = 128 << 20
	var obj backup.Object
	var err error
	growth := heapGrowthDuring(func() {
		obj, err = s.Put(context.Background(), "big", io.LimitReader(&pseudoRandom{r: rand.New(rand.NewPCG(6, 6))}, size), backup.PutOptions{Size: size})
	})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size != size {
		t.Fatalf("stored %d bytes, want %d", obj.Size, size)
	}
	t.Logf("heap growth during a %d MiB upload of known size: %.1f MiB", size>>20, float64(growth)/(1<<20))
	if growth > 10<<20 {
		t.Errorf("heap grew by %.1f MiB: more than the part buffers a streamed PUT does without", float64(growth)/(1<<20))
	}
}

// TestSaveSnapshotToS3IsOnePut: a snapshot of a real member larger than an upload part
// is stored with one PUT of the length etcd announced, and reads back verified.
func TestSaveSnapshotToS3IsOnePut(t *testing.T) {
	cl := etcdtest.StartCluster(t, 1, "v3.7.3")
	ctx := context.Background()
	cli := cl.Client(t)
	value := strings.Repeat("v", 512<<10)
	for i := range 16 { // 8 MiB of values: more than one 5 MiB part
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: cl.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	s, srv := s3Store(t)
	res, err := backup.SaveSnapshot(ctx, admin, s, backup.SnapshotRequest{Key: "c/snap"})
	if err != nil {
		t.Fatal(err)
	}
	if e := etag(t, srv.Client(t), "c/snap"); strings.Contains(e, "-") || res.Object.Size < 8<<20 {
		t.Errorf("stored %d bytes with ETag %s: want over 8 MiB in one PUT", res.Object.Size, e)
	}
	b, obj, err := readAll(t, s, "c/snap")
	if err != nil || int64(len(b)) != res.Object.Size || obj.SHA256 != res.Object.SHA256 {
		t.Errorf("read %d bytes (%v), checksum %s; stored %d, %s", len(b), err, obj.SHA256, res.Object.Size, res.Object.SHA256)
	}
}
