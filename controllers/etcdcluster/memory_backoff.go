package etcdcluster

import (
	"fmt"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// Back-off of a step that keeps failing (a quota, an admission rejection, an unreadable
// Secret): the first retry comes after failureBackoffBase, each further one after twice
// the previous delay, at most failureBackoffMax. The cap keeps a fix made outside the
// cluster's spec (a Secret created, a quota raised) noticed within a couple of minutes.
const (
	failureBackoffBase = activeResync
	failureBackoffMax  = 2 * time.Minute
)

// stepBackoff remembers, per cluster, the last step that failed, so that reconciles woken
// by watch events (a pod's status, the operator's own status write) do not retry it
// before its delay is over. Only the same step for the same spec generation waits: a
// cluster whose plan moved on, or whose spec changed, proceeds at once. It is memory
// only: an operator restart retries at once, which is harmless.
type stepBackoff struct {
	mu      sync.Mutex
	failed  map[string]failedStep  // by cluster namespace/name
	waiting map[string]waitingStep // by cluster namespace/name
}

// waitingStep is a step etcd refused for a condition that clears on its own (see
// etcdWait), since the first refusal.
type waitingStep struct {
	step       string
	generation int64
	since      time.Time
}

type failedStep struct {
	step       string
	generation int64
	count      int
	retryAt    time.Time
}

func newStepBackoff() *stepBackoff {
	return &stepBackoff{failed: map[string]failedStep{}, waiting: map[string]waitingStep{}}
}

// stepKey identifies a planned step: same kind on the same member is the same step,
// whatever the planner's message says this time.
func stepKey(a planner.Action) string {
	return fmt.Sprintf("%s/%s/%x", a.Kind, a.Name, a.ID)
}

// backoffDelay is the delay after the n-th consecutive failure (n >= 1).
func backoffDelay(n int) time.Duration {
	d := failureBackoffBase
	for i := 1; i < n && d < failureBackoffMax; i++ {
		d *= 2
	}
	return min(d, failureBackoffMax)
}

// fail records a failure of step and returns how long to wait before trying it again.
func (b *stepBackoff) fail(cluster, step string, generation int64, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.failed[cluster]
	if f.step != step || f.generation != generation {
		f = failedStep{step: step, generation: generation}
	}
	f.count++
	d := backoffDelay(f.count)
	f.retryAt = now.Add(d)
	b.failed[cluster] = f
	return d
}

// wait returns how long step must still wait, if it is the step that failed last for
// this generation and its delay is not over.
func (b *stepBackoff) wait(cluster, step string, generation int64, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.failed[cluster]
	if !ok || f.step != step || f.generation != generation || !now.Before(f.retryAt) {
		return 0, false
	}
	return f.retryAt.Sub(now), true
}

// succeed forgets the failures of step, if it is the one that failed last. A Wait that
// "succeeds" in between does not reset the count of a step that keeps failing.
func (b *stepBackoff) succeed(cluster, step string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed[cluster].step == step {
		delete(b.failed, cluster)
	}
	if b.waiting[cluster].step == step {
		delete(b.waiting, cluster)
	}
}

// etcdWaitLimit is how long a step may wait on etcd (etcdWait) before its refusals
// count as failures: reported (event, condition) and backed off.
const etcdWaitLimit = 30 * time.Second

// waitOnEtcd records that step was refused for a condition that clears on its own and
// says whether it may still simply be retried soon: true until it has been waiting for
// etcdWaitLimit (same step, same generation, no success in between).
func (b *stepBackoff) waitOnEtcd(cluster, step string, generation int64, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.waiting[cluster]
	if !ok || w.step != step || w.generation != generation || now.Before(w.since) {
		w = waitingStep{step: step, generation: generation, since: now}
		b.waiting[cluster] = w
	}
	return now.Sub(w.since) < etcdWaitLimit
}

// forget drops a deleted cluster.
func (b *stepBackoff) forget(cluster string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failed, cluster)
	delete(b.waiting, cluster)
}
