package etcdcluster

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	for n, want := range map[int]string{1: "2s", 2: "4s", 3: "8s", 6: "1m4s", 7: "2m0s", 8: "2m0s", 1000: "2m0s"} {
		if got := backoffDelay(n).String(); got != want {
			t.Errorf("backoffDelay(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestWaitOnEtcd: a step refused by etcd for a moment is retried quietly until it has
// waited etcdWaitLimit; then it counts as failing. Another step, another generation or a
// success starts the clock again.
func TestWaitOnEtcd(t *testing.T) {
	b := newStepBackoff()
	t0 := time.Unix(1000, 0)
	if !b.waitOnEtcd("ns/c", "AddLearner/m1/0", 1, t0) {
		t.Fatal("first refusal: not a wait")
	}
	if !b.waitOnEtcd("ns/c", "AddLearner/m1/0", 1, t0.Add(etcdWaitLimit-time.Second)) {
		t.Error("refused again within the limit: not a wait")
	}
	if b.waitOnEtcd("ns/c", "AddLearner/m1/0", 1, t0.Add(etcdWaitLimit)) {
		t.Error("refused for the whole limit: still a wait, want a failure")
	}
	if !b.waitOnEtcd("ns/c", "PromoteLearner/m1/1", 1, t0.Add(etcdWaitLimit)) {
		t.Error("another step: its clock did not start afresh")
	}
	if !b.waitOnEtcd("ns/c", "PromoteLearner/m1/1", 2, t0.Add(2*etcdWaitLimit)) {
		t.Error("a new generation: its clock did not start afresh")
	}
	b.succeed("ns/c", "PromoteLearner/m1/1")
	if !b.waitOnEtcd("ns/c", "PromoteLearner/m1/1", 2, t0.Add(4*etcdWaitLimit)) {
		t.Error("after a success: the clock did not start afresh")
	}
	if !b.waitOnEtcd("ns/other", "AddLearner/m1/0", 1, t0.Add(etcdWaitLimit)) {
		t.Error("another cluster shares the clock")
	}
}
