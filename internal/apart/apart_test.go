package apart

import (
	"context"
	"testing"
	"time"
)

// A job that blocks does not block the caller, nor another namespace's job; a third job
// in the busy namespace waits and runs once one of the namespace's jobs ends; a panic
// becomes the job's Panicked result.
func TestAskRunsApartPerNamespace(t *testing.T) {
	q := &Queue[string, string]{PerNamespace: 1, Total: 4}
	release := make(chan struct{})
	job := Job[string, string]{
		Work: func(_ context.Context, _ string, v string) string {
			switch v {
			case "block":
				<-release
			case "panic":
				panic("boom")
			}
			return v + " done"
		},
		Panicked: func(key, v string) string { return "panicked" },
	}
	ctx := context.Background()
	blocked := q.Ask(ctx, "a/slow", "block", job)
	if blocked == nil {
		t.Fatal("a's first job did not start")
	}
	if d := q.Ask(ctx, "a/second", "fast", job); d != nil {
		t.Fatal("a's second job started beside its first (one per namespace)")
	}
	other := q.Ask(ctx, "b/x", "fast", job)
	select {
	case <-other:
	case <-time.After(10 * time.Second):
		t.Fatal("b's job waited for a's blocked one")
	}
	if r, _, ok := q.Result("b/x"); !ok || r != "fast done" {
		t.Errorf("b's result %q %v", r, ok)
	}
	pan := q.Ask(ctx, "c/p", "panic", job)
	<-pan
	if r, _, _ := q.Result("c/p"); r != "panicked" {
		t.Errorf("a panicking job's result %q, want its Panicked result", r)
	}
	close(release)
	<-blocked
	// The goroutine that ran a/slow takes a/second, the waiter, next.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, _, ok := q.Result("a/second"); ok {
			if r != "fast done" {
				t.Errorf("a's waiter's result %q", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's waiting job never ran after the blocked one ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := q.Running("a"); n != 0 {
		t.Errorf("a counts %d running goroutines after all ended", n)
	}
}

// Two busy namespaces cannot starve an idle one: with every shared slot taken, a
// namespace's only job runs in a reserve slot; the reserve is bounded too, and a busy
// namespace's second job never takes it.
func TestIdleNamespaceIsNotStarvedByBusyOnes(t *testing.T) {
	q := &Queue[string, string]{PerNamespace: 2, Total: 1, Reserve: 1}
	release := make(chan struct{})
	started := make(chan string, 8)
	job := Job[string, string]{Work: func(_ context.Context, key string, v string) string {
		started <- key
		if v == "block" {
			<-release
		}
		return v + " done"
	}}
	ctx := context.Background()
	first := q.Ask(ctx, "a/1", "block", job)
	if got := <-started; got != "a/1" {
		t.Fatalf("started %s, want a/1", got)
	}
	q.Ask(ctx, "a/2", "block", job) // a's second: waits for the shared slot
	idle := q.Ask(ctx, "b/1", "fast", job)
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("b's only job waited behind a's jobs")
	}
	if got := <-started; got != "b/1" {
		t.Fatalf("started %s, want b/1 (a's second job must not take the reserve)", got)
	}
	// The reserve is free again; hold it with c's job, then d's only job waits.
	q.Ask(ctx, "c/1", "block", job)
	if got := <-started; got != "c/1" {
		t.Fatalf("started %s, want c/1", got)
	}
	d := q.Ask(ctx, "d/1", "fast", job)
	select {
	case <-d:
		t.Fatal("d's job ran beyond Total + Reserve")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-first
	<-d
}
