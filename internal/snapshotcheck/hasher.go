package snapshotcheck

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/apart"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// DefaultHashTimeout bounds the operator's own read of an object (--backup-hash-timeout):
// as long as the check pod had to read it.
const DefaultHashTimeout = Timeout

// hashPoll is how soon a reconcile looks again for a read running apart.
const hashPoll = 5 * time.Second

// Hashed is the operator's own read of an object: its description and SHA-256, or why
// the read failed.
type Hashed struct {
	Obj    backup.Object
	SHA256 string
	Err    error
}

// hashJob is one object to read.
type hashJob struct {
	store backup.Store
	key   string
	loc   string
}

// Hasher reads objects through SHA-256 (backup.HashObject) apart from the reconcile
// workers (internal/apart: two reads per namespace and four in all at a time, the
// namespace's longest waiting next), each within Timeout: a tenant's slow-drip endpoint
// holds a goroutine of its own namespace, never a worker. Its zero value is ready to use.
type Hasher struct {
	// Timeout bounds each read (0: DefaultHashTimeout).
	Timeout time.Duration
	// Now replaces time.Now (tests).
	Now func() time.Time
	// Await makes Hash wait for the read it started or joined, for tests that read the
	// outcome of one reconcile.
	Await bool

	once sync.Once
	q    apart.Queue[hashJob, Hashed]
}

// HashPending says the operator's read of an object runs apart from the workers: look
// again After.
type HashPending struct {
	Loc   string
	After time.Duration
}

func (p *HashPending) Error() string {
	return fmt.Sprintf("the snapshot check of %s passed; the operator reads the object's SHA-256 itself (apart from its workers) before trusting it", p.Loc)
}

func (h *Hasher) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Hasher) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return DefaultHashTimeout
}

func (h *Hasher) queue() *apart.Queue[hashJob, Hashed] {
	h.once.Do(func() {
		h.q.PerNamespace, h.q.Total, h.q.MaxIdle = 2, 4, h.timeout()+time.Minute
	})
	return &h.q
}

// Hash returns the operator's read of key in store, done apart from the caller: the
// result when it is done (and forgotten then: the next Hash of id reads again), else a
// *HashPending once the read is started or queued. id names the read (namespace/...:
// the namespace bounds it) and must change when what is read changes. Results nobody
// came back for are dropped after twice the timeout.
func (h *Hasher) Hash(ctx context.Context, id string, store backup.Store, key, loc string) (Hashed, error) {
	q, now := h.queue(), h.now()
	q.ForgetOlder(now.Add(-2 * h.timeout()))
	if r, _, ok := q.Result(id); ok {
		q.Forget(id)
		return r, nil
	}
	limit := h.timeout()
	done := q.Ask(ctx, id, hashJob{store: store, key: key, loc: loc}, apart.Job[hashJob, Hashed]{
		Work: func(ctx context.Context, _ string, j hashJob) Hashed {
			hctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			obj, sum, err := backup.HashObject(hctx, j.store, j.key)
			if err != nil && hctx.Err() != nil {
				err = &hashTimeout{loc: j.loc, limit: limit, err: err}
			}
			return Hashed{Obj: obj, SHA256: sum, Err: err}
		},
		Panicked: func(_ string, j hashJob) Hashed {
			return Hashed{Err: fmt.Errorf("the operator's own read of %s failed (an internal error, logged by the operator)", j.loc)}
		},
		Now: h.now,
	})
	if h.Await && done != nil {
		<-done
		if r, _, ok := q.Result(id); ok {
			q.Forget(id)
			return r, nil
		}
	}
	return Hashed{}, &HashPending{Loc: loc, After: hashPoll}
}

// ForgetPrefix drops the results and waiters of every read whose id starts with prefix
// (their owner was deleted); a read still running keeps its result to itself.
func (h *Hasher) ForgetPrefix(prefix string) {
	h.queue().ForgetIf(func(id string) bool { return strings.HasPrefix(id, prefix) })
}

// hashTimeout is a read cut at the Hasher's deadline (reason Timeout).
type hashTimeout struct {
	loc   string
	limit time.Duration
	err   error
}

func (e *hashTimeout) Error() string {
	return fmt.Sprintf("the operator's own read of %s did not finish within %s (--backup-hash-timeout): the endpoint sends too slowly", e.loc, e.limit)
}

func (e *hashTimeout) Unwrap() []error { return []error{e.err, context.DeadlineExceeded} }

// Confirm is the package function Confirm with the operator's read done apart by h: a
// *HashPending while it runs. A check that failed needs no read.
func (h *Hasher) Confirm(ctx context.Context, id string, store backup.Store, key, loc string, res restore.CheckResult) (backup.Object, string, error) {
	if err := reported(key, loc, res); err != nil {
		return backup.Object{}, "", err
	}
	hashed, err := h.Hash(ctx, id, store, key, loc)
	if err != nil {
		return backup.Object{}, "", err
	}
	return compare(hashed, loc, res)
}
