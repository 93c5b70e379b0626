package etcdrestore

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/apart"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
)

// Finding a restore's object reads the tenant's endpoint: whether spec.s3.path exists,
// else its newest periodic backup (a listing), or the object a backupRef's selection
// chooses (a listing and metadata reads). Those calls run apart from the reconcile
// workers (internal/apart, as the operator's SHA-256 reads do: two lookups per namespace
// and four in all at a time, the namespace's longest waiting next), each lookup within
// lookupTimeout in all (past it the restore fails with reason Timeout, and is looked for
// again at the next retry). A reconcile starts the lookup and returns with a pending
// message; a later reconcile uses its result.
//
// A result is keyed by the restore's namespace/name/UID/generation and a hash of what
// was looked for (endpoint, path, credentials' Secret, the EtcdBackup's UID and
// generation, the selection), so it is never used for another restore, another spec or
// another backup. A failure is used once (the retry looks again); a found object is kept
// for lookupKeep (the check pod that follows needs it at each reconcile), and every
// result of a restore is dropped when the restore is deleted.
const (
	lookupTimeout = 3 * time.Minute
	lookupKeep    = 10 * time.Minute
	lookupPoll    = 2 * time.Second
)

// lookupResult is a finished lookup: the object's key, or why none was found.
type lookupResult struct {
	key   string
	entry backupselect.Entry // the chosen object's description (a backupRef's selection)
	err   error
}

// lookFunc is one lookup, run apart within the deadline of its ctx.
type lookFunc func(ctx context.Context) lookupResult

// lookups runs the restores' lookups apart from the workers. Its zero value is ready.
type lookups struct {
	// timeout replaces lookupTimeout when set (tests); await makes find wait for the
	// lookup it started, for tests that read the outcome of one reconcile.
	timeout time.Duration
	await   bool

	once sync.Once
	q    apart.Queue[lookFunc, lookupResult]
}

func (l *lookups) limit() time.Duration {
	if l.timeout > 0 {
		return l.timeout
	}
	return lookupTimeout
}

func (l *lookups) queue() *apart.Queue[lookFunc, lookupResult] {
	l.once.Do(func() {
		l.q.PerNamespace, l.q.Total, l.q.MaxIdle = 2, 4, l.limit()+time.Minute
	})
	return &l.q
}

// lookupID names er's lookup of inputs (anything JSON-encodable that determines it).
func lookupID(er *etcdv1beta2.EtcdRestore, inputs any) string {
	raw, _ := json.Marshal(inputs)
	return fmt.Sprintf("%s/%s/%s/%d/%x", er.Namespace, er.Name, er.UID, er.Generation, sha256.Sum256(raw))
}

// find returns the result of lookup id (what names the object looked for, for
// messages), running look apart from the caller: a *checkPending while it is queued or
// runs.
func (l *lookups) find(ctx context.Context, id, what string, look lookFunc) (lookupResult, error) {
	q := l.queue()
	q.ForgetOlder(time.Now().Add(-lookupKeep))
	if r, ok := l.take(id); ok {
		return r, nil
	}
	limit := l.limit()
	done := q.Ask(ctx, id, look, apart.Job[lookFunc, lookupResult]{
		Work: func(ctx context.Context, _ string, look lookFunc) lookupResult {
			lctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			r := look(lctx)
			if r.err != nil && lctx.Err() != nil {
				r.err = &backupstorage.Error{Reason: etcdv1beta2.ReasonTimeout,
					Err: fmt.Errorf("finding backup %s took longer than %s: the endpoint answers too slowly; looked for again in %s", what, limit, restoreRetry)}
			}
			return r
		},
		Panicked: func(string, lookFunc) lookupResult {
			return lookupResult{err: fmt.Errorf("finding backup %s failed (an internal error, logged by the operator)", what)}
		},
	})
	if l.await && done != nil {
		<-done
		if r, ok := l.take(id); ok {
			return r, nil
		}
	}
	return lookupResult{}, &checkPending{after: lookupPoll,
		msg: fmt.Sprintf("looking for backup %s apart from the operator's workers (two lookups per namespace at a time, each within %s)", what, limit)}
}

// take is id's result; a failure is forgotten once taken (the retry looks again).
func (l *lookups) take(id string) (lookupResult, bool) {
	q := l.queue()
	r, _, ok := q.Result(id)
	if ok && r.err != nil {
		q.Forget(id)
	}
	return r, ok
}

// forgetRestore drops every result and waiter of the restore namespace/name (deleted).
// A lookup still running keeps its result to itself.
func (l *lookups) forgetRestore(restore string) {
	l.queue().ForgetIf(func(key string) bool { return strings.HasPrefix(key, restore+"/") })
}
