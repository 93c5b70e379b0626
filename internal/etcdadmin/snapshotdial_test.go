package etcdadmin

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
)

// recordingPool records the sizes asked of a pool and the capacities it handed out.
type recordingPool struct {
	mem.BufferPool
	mu          sync.Mutex
	maxAsked    int
	maxCapacity int
}

func (p *recordingPool) Get(n int) *[]byte {
	b := p.BufferPool.Get(n)
	p.mu.Lock()
	p.maxAsked = max(p.maxAsked, n)
	p.maxCapacity = max(p.maxCapacity, cap(*b))
	p.mu.Unlock()
	return b
}

// TestSnapshotBuffersFitMessages streams a snapshot of a real member and checks that
// gRPC's receive buffers are sized for etcd's snapshot messages (a 32 KiB blob plus
// headers), not the 1 MiB buffers the default pool hands out for them, which were
// zeroed on every message.
func TestSnapshotBuffersFitMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eps := filledMember(t, ctx, 8, 256<<10)

	orig := snapshotBufferPool
	t.Cleanup(func() { snapshotBufferPool = orig }) // after openSnapshot's clean-up
	rec := &recordingPool{BufferPool: orig}
	snapshotBufferPool = rec

	snap := openSnapshot(t, ctx, eps)
	n, err := io.Copy(io.Discard, snap)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2<<20 {
		t.Fatalf("snapshot of %d bytes: too small to exercise full messages", n)
	}
	// The premise: a snapshot message is larger than the 32 KiB tier.
	if rec.maxAsked <= 32<<10 {
		t.Fatalf("largest buffer asked for is %d bytes; expected etcd's snapshot messages (> 32 KiB)", rec.maxAsked)
	}
	if rec.maxCapacity > 64<<10 {
		t.Errorf("a %d-byte snapshot message was received into a %d-byte buffer; want at most 64 KiB", rec.maxAsked, rec.maxCapacity)
	}
}
