package restore

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// stuckStore is a store whose object never finishes reading and which does not look at
// its context: the check stands still, as bbolt did on a malformed page.
type stuckStore struct{ backup.Store }

func (stuckStore) Get(context.Context, string) (io.ReadCloser, backup.Object, error) {
	return io.NopCloser(blockingReader{}), backup.Object{Key: "snap.db"}, nil
}

func (stuckStore) String() string { return "stuck" }

type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

// A check that does not end reports VerificationFailed when its context does, instead of
// keeping its pod (or FuzzCheckSnapshot's child) running without a result.
func TestCheckSnapshotEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan CheckResult, 1)
	go func() { done <- CheckSnapshot(ctx, stuckStore{}, "snap.db", t.TempDir()) }()
	select {
	case res := <-done:
		if res.Reason != etcdv1beta2.ReasonVerificationFailed || !strings.Contains(res.Error, "did not end") || res.Key != "snap.db" {
			t.Errorf("result %+v, want VerificationFailed saying the check did not end", res)
		}
	case <-time.After(time.Minute): // a hang detector, not a timing assert
		t.Fatal("CheckSnapshot did not return after its context ended")
	}
}
