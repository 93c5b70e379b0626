package kubelet

import "time"

// restartBackoff is the bench's CrashLoopBackOff: the delay before the n-th consecutive
// restart of a container is initial*2^(n-1) capped at max (a real kubelet uses 10s..5m).
// A container that ran for at least resetAfter before exiting starts over at initial.
type restartBackoff struct {
	initial, max, resetAfter time.Duration
}

func newRestartBackoff(initial, maxDelay time.Duration) restartBackoff {
	if initial <= 0 {
		initial = time.Second
	}
	if maxDelay < initial {
		maxDelay = 10 * initial
	}
	return restartBackoff{initial: initial, max: maxDelay, resetAfter: 2 * maxDelay}
}

// delay for the n-th consecutive restart, n >= 1.
func (b restartBackoff) delay(n int) time.Duration {
	d := b.initial
	for i := 1; i < n; i++ {
		d *= 2
		if d >= b.max {
			return b.max
		}
	}
	return min(d, b.max)
}

// next returns the updated consecutive-restart count after a run of length ran.
func (b restartBackoff) next(consecutive int, ran time.Duration) int {
	if ran >= b.resetAfter {
		return 1
	}
	return consecutive + 1
}
