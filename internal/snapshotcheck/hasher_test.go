package snapshotcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// tarpitStore serves one object: at full speed, or (slow) one byte per 20 ms until the
// read's context ends.
type tarpitStore struct {
	data []byte
	slow bool
}

func (s *tarpitStore) Get(ctx context.Context, key string) (io.ReadCloser, backup.Object, error) {
	obj := backup.Object{Key: key, Size: int64(len(s.data))}
	if !s.slow {
		return io.NopCloser(bytes.NewReader(s.data)), obj, nil
	}
	return io.NopCloser(&dripReader{ctx: ctx, r: bytes.NewReader(s.data)}), obj, nil
}

func (s *tarpitStore) Put(context.Context, string, io.Reader, backup.PutOptions) (backup.Object, error) {
	return backup.Object{}, errors.New("read only")
}
func (s *tarpitStore) List(context.Context, string) ([]backup.Object, error) { return nil, nil }
func (s *tarpitStore) Delete(context.Context, string) error                  { return nil }
func (s *tarpitStore) String() string                                        { return "tarpit://bucket" }

type dripReader struct {
	ctx context.Context
	r   io.Reader
}

func (d *dripReader) Read(p []byte) (int, error) {
	select {
	case <-d.ctx.Done():
		return 0, d.ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return d.r.Read(p[:1])
	}
}

// The operator's own read runs apart: Confirm returns a *HashPending at once, the
// passed check is confirmed at a later call; a read past the Hasher's deadline fails
// with reason Timeout naming the flag, and a tenant's slow reads (two per namespace)
// leave another namespace's read free to run.
func TestHasherReadsApartWithADeadline(t *testing.T) {
	data := bytes.Repeat([]byte("etcd"), 1<<12) // 16 KiB: 5 minutes at the drip
	sum := sha256.Sum256(data)
	passed := restore.CheckResult{Key: "k", SHA256: hex.EncodeToString(sum[:])}
	h := &Hasher{Timeout: 2 * time.Second}
	ctx := context.Background()
	slow, fast := &tarpitStore{data: data, slow: true}, &tarpitStore{data: data}

	// team-a fills its two slots with slow reads; a third waits.
	for _, id := range []string{"team-a/r1", "team-a/r2", "team-a/r3"} {
		if _, _, err := h.Confirm(ctx, id, slow, "k", "s3://bucket/k", passed); !errors.As(err, new(*HashPending)) {
			t.Fatalf("%s: %v, want the read pending", id, err)
		}
	}
	// team-b's read runs beside them and confirms the check.
	var got string
	poll.Eventually(t, 30*time.Second, 10*time.Millisecond, "team-b's read", func() error {
		_, s, err := h.Confirm(ctx, "team-b/r1", fast, "k", "s3://bucket/k", passed)
		if err != nil {
			return err
		}
		got = s
		return nil
	})
	if got != passed.SHA256 {
		t.Errorf("team-b confirmed sha256 %s, want %s", got, passed.SHA256)
	}
	// team-a's reads end at the deadline: Timeout, naming the flag.
	poll.Eventually(t, 30*time.Second, 20*time.Millisecond, "team-a's first read to end", func() error {
		_, _, err := h.Confirm(ctx, "team-a/r1", slow, "k", "s3://bucket/k", passed)
		if errors.As(err, new(*HashPending)) {
			return err
		}
		var be *backupstorage.Error
		if !errors.As(err, &be) || be.Reason != etcdv1beta2.ReasonTimeout || !strings.Contains(be.Err.Error(), "--backup-hash-timeout") {
			t.Fatalf("team-a's slow read: %v, want reason %s naming --backup-hash-timeout", err, etcdv1beta2.ReasonTimeout)
		}
		return nil
	})
	// A failed check needs no read at all.
	failed := restore.CheckResult{Reason: etcdv1beta2.ReasonInvalidSnapshot, Error: "bad"}
	if _, _, err := h.Confirm(ctx, "team-c/r1", slow, "k", "s3://bucket/k", failed); errors.As(err, new(*HashPending)) {
		t.Errorf("a failed check started a read: %v", err)
	}
	if n := h.queue().Running("team-c"); n != 0 {
		t.Errorf("team-c runs %d reads for a failed check", n)
	}
}

// ForgetPrefix drops the reads of one owner (a deleted restore) and keeps another's,
// even one whose name starts alike.
func TestHasherForgetPrefix(t *testing.T) {
	var h Hasher
	now := time.Now()
	h.queue().Put("ns/r/uid-1/1/x", Hashed{SHA256: "a"}, now)
	h.queue().Put("ns/r2/uid-2/1/x", Hashed{SHA256: "b"}, now)
	h.ForgetPrefix("ns/r/")
	if _, _, ok := h.queue().Result("ns/r/uid-1/1/x"); ok {
		t.Error("the forgotten owner's read is kept")
	}
	if _, _, ok := h.queue().Result("ns/r2/uid-2/1/x"); !ok {
		t.Error("another owner's read was dropped")
	}
}
