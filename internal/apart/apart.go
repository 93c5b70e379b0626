// Package apart runs slow work on tenant input (listing or reading a tenant's S3
// endpoint) apart from the controllers' reconcile workers, so that no tenant holds the
// workers every namespace shares. A reconcile asks for a job by key and returns at
// once; the job runs on a goroutine and its result is read by a later reconcile.
//
// A Queue bounds the jobs: at most PerNamespace at a time per namespace (the key's
// first "/"-separated part) and Total in all, except that a namespace's only job may run
// beyond Total (up to Reserve more in all), so busy namespaces cannot starve an idle
// one. A job asked for while its namespace is
// busy waits; the goroutine that finishes one of the namespace's jobs takes the
// namespace's waiter that has waited longest next, in the same step as it records its
// result (no other job slips in between), so each waiter gets its turn within one job
// of the one before. A waiter that has not asked again for MaxIdle is dropped (its
// owner no longer needs it: deleted, paused, no longer lost). A job that panics becomes
// its Panicked result instead of ending the operator (no reconcile's recovery covers a
// goroutine). A key forgotten while its job runs still counts against its namespace
// until the goroutine ends, and its result is dropped.
package apart

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Queue runs jobs of payload V with results R. Its zero value is not usable: set
// PerNamespace, Total and MaxIdle (or use the defaults: 2, 4 and one hour).
type Queue[V, R any] struct {
	PerNamespace, Total int
	// Reserve is how many jobs beyond Total may run, each the only one of its
	// namespace (default 16; see acquire).
	Reserve int
	MaxIdle time.Duration

	mu sync.Mutex
	// inflight are the jobs running, by key; slots bounds them in all (a goroutine
	// holds a slot while it works). waiting are the keys whose namespace was busy when
	// they asked. running counts, per namespace, the goroutines working for it.
	inflight map[string]chan struct{}
	waiting  map[string]waiter[V]
	running  map[string]int
	slots    chan struct{}
	reserve  chan struct{}
	results  map[string]result[R]
}

type waiter[V any] struct {
	since, asked time.Time // first and last time it asked
	v            V
}

type result[R any] struct {
	at time.Time
	r  R
}

// Namespace is key's namespace: its part before the first "/".
func Namespace(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

func (q *Queue[V, R]) perNamespace() int {
	if q.PerNamespace > 0 {
		return q.PerNamespace
	}
	return 2
}

func (q *Queue[V, R]) maxIdle() time.Duration {
	if q.MaxIdle > 0 {
		return q.MaxIdle
	}
	return time.Hour
}

// Begin returns the channel closed when key's job ends: the running one's, or a new
// one's when start is true (the caller runs it, then calls Finish). nil: the namespace
// has PerNamespace jobs running; v waits for its turn (a later Finish hands it out).
func (q *Queue[V, R]) Begin(key string, v V, now time.Time) (done chan struct{}, start bool) {
	ns := Namespace(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	if d, ok := q.inflight[key]; ok {
		return d, false
	}
	if q.running[ns] >= q.perNamespace() {
		if q.waiting == nil {
			q.waiting = map[string]waiter[V]{}
		}
		w, ok := q.waiting[key]
		if !ok {
			w.since = now
		}
		w.v, w.asked = v, now
		q.waiting[key] = w
		return nil, false
	}
	delete(q.waiting, key)
	if q.running == nil {
		q.running = map[string]int{}
	}
	q.running[ns]++
	return q.startLocked(key), true
}

func (q *Queue[V, R]) startLocked(key string) chan struct{} {
	if q.inflight == nil {
		q.inflight = map[string]chan struct{}{}
	}
	d := make(chan struct{})
	q.inflight[key] = d
	return d
}

// Finish records key's result r at now, unless key was forgotten meanwhile, closes done
// and hands the goroutine the namespace's longest-waiting key (marked started; ok false
// when none waits, and the goroutine ends), in one step.
func (q *Queue[V, R]) Finish(key string, done chan struct{}, r R, now time.Time) (nextKey string, v V, next chan struct{}, ok bool) {
	ns := Namespace(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inflight[key] == done {
		delete(q.inflight, key)
		if q.results == nil {
			q.results = map[string]result[R]{}
		}
		q.results[key] = result[R]{at: now, r: r}
	}
	close(done)
	var best string
	for k, w := range q.waiting {
		if Namespace(k) != ns {
			continue
		}
		if now.Sub(w.asked) >= q.maxIdle() {
			delete(q.waiting, k)
			continue
		}
		if best == "" || w.since.Before(q.waiting[best].since) {
			best = k
		}
	}
	if best == "" {
		if q.running[ns]--; q.running[ns] <= 0 {
			delete(q.running, ns)
		}
		var zero V
		return "", zero, nil, false
	}
	w := q.waiting[best]
	delete(q.waiting, best)
	return best, w.v, q.startLocked(best), true
}

// Result is key's latest result and when it was recorded.
func (q *Queue[V, R]) Result(key string) (R, time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	res, ok := q.results[key]
	return res.r, res.at, ok
}

// Put records r as key's result (a result found without a job).
func (q *Queue[V, R]) Put(key string, r R, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.results == nil {
		q.results = map[string]result[R]{}
	}
	q.results[key] = result[R]{at: now, r: r}
}

// Forget drops key's result and waiter; a job still running for key keeps its result
// to itself (and counts against its namespace until it ends).
func (q *Queue[V, R]) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgetLocked(func(k string) bool { return k == key })
}

// ForgetIf drops the results and waiters of every key match accepts.
func (q *Queue[V, R]) ForgetIf(match func(key string) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgetLocked(match)
}

// ForgetOlder drops the results recorded before t (their owners never came back for
// them: deleted meanwhile).
func (q *Queue[V, R]) ForgetOlder(t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, res := range q.results {
		if res.at.Before(t) {
			delete(q.results, k)
		}
	}
}

func (q *Queue[V, R]) forgetLocked(match func(string) bool) {
	for k := range q.results {
		if match(k) {
			delete(q.results, k)
		}
	}
	for k := range q.inflight {
		if match(k) {
			delete(q.inflight, k)
		}
	}
	for k := range q.waiting {
		if match(k) {
			delete(q.waiting, k)
		}
	}
}

// Running is how many goroutines work for namespace.
func (q *Queue[V, R]) Running(namespace string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running[namespace]
}

// Job is what a goroutine runs for one key: Work, and Panicked's result if Work panics.
type Job[V, R any] struct {
	Work     func(ctx context.Context, key string, v V) R
	Panicked func(key string, v V) R
	Now      func() time.Time
}

// Ask starts key's job apart from the caller if it is not running and its namespace has
// room (else key waits for its turn), and returns the channel closed when key's job
// ends (nil while it waits). ctx's values are kept, its cancellation is not: the job
// outlives the reconcile that asked, and bounds itself.
func (q *Queue[V, R]) Ask(ctx context.Context, key string, v V, job Job[V, R]) <-chan struct{} {
	now := time.Now
	if job.Now != nil {
		now = job.Now
	}
	done, start := q.Begin(key, v, now())
	if start {
		go q.run(context.WithoutCancel(ctx), key, v, done, job, now)
	}
	return done
}

func (q *Queue[V, R]) run(ctx context.Context, key string, v V, done chan struct{}, job Job[V, R], now func() time.Time) {
	for ok := true; ok; {
		r := q.work(ctx, key, v, job)
		key, v, done, ok = q.Finish(key, done, r, now())
	}
}

// work runs one job in one of Total slots (or a reserve slot, see acquire), a panic
// becoming job.Panicked's result.
func (q *Queue[V, R]) work(ctx context.Context, key string, v V, job Job[V, R]) (r R) {
	defer q.acquire(Namespace(key))()
	defer func() {
		if p := recover(); p != nil {
			log.FromContext(ctx).Error(fmt.Errorf("%v", p), "work apart from the reconcile workers panicked", "key", key, "stack", string(debug.Stack()))
			if job.Panicked != nil {
				r = job.Panicked(key, v)
			}
		}
	}()
	return job.Work(ctx, key, v)
}

// acquire takes a slot for a job of namespace ns and returns its release. Total slots
// are shared; when they are all taken, a namespace's only running job may take one of
// Reserve more instead of waiting: two busy namespaces (each at PerNamespace jobs on a
// slow endpoint of its own choosing) would otherwise hold every slot for as long as
// their jobs' deadlines, and a third namespace, with nothing running, would wait behind
// them. Reserve still bounds the jobs in all (Total + Reserve).
func (q *Queue[V, R]) acquire(ns string) (release func()) {
	slots, reserve := q.slotsChan(), q.reserveChan()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }
	default:
	}
	if q.Running(ns) <= 1 {
		select {
		case slots <- struct{}{}:
			return func() { <-slots }
		case reserve <- struct{}{}:
			return func() { <-reserve }
		}
	}
	slots <- struct{}{}
	return func() { <-slots }
}

func (q *Queue[V, R]) reserveChan() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.reserve == nil {
		n := q.Reserve
		if n <= 0 {
			n = 16
		}
		q.reserve = make(chan struct{}, n)
	}
	return q.reserve
}

func (q *Queue[V, R]) slotsChan() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.slots == nil {
		n := q.Total
		if n <= 0 {
			n = 4
		}
		q.slots = make(chan struct{}, n)
	}
	return q.slots
}
