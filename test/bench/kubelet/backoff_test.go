package kubelet

import (
	"testing"
	"time"
)

func TestRestartBackoff(t *testing.T) {
	b := newRestartBackoff(time.Second, 10*time.Second)
	want := []time.Duration{1, 2, 4, 8, 10, 10, 10}
	for i, w := range want {
		if got := b.delay(i + 1); got != w*time.Second {
			t.Errorf("delay(%d) = %v, want %v", i+1, got, w*time.Second)
		}
	}
	// Quick crashes accumulate; a run longer than resetAfter starts over.
	n := 0
	for i := 0; i < 4; i++ {
		n = b.next(n, time.Second)
	}
	if n != 4 || b.delay(n) != 8*time.Second {
		t.Fatalf("after 4 quick crashes n=%d delay=%v", n, b.delay(n))
	}
	if n = b.next(n, b.resetAfter); n != 1 {
		t.Fatalf("after a long run n=%d, want 1", n)
	}
	d := newRestartBackoff(0, 0)
	if d.initial != time.Second || d.max != 10*time.Second {
		t.Fatalf("defaults %v %v", d.initial, d.max)
	}
}
