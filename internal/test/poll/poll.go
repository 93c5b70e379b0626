// Package poll is the one polling loop of the tests: check a condition every interval
// until it holds or a timeout passes. It imports nothing of this repository, so any test
// may use it (test/framework's Eventually and Poll are this loop at 250 ms).
package poll

import (
	"testing"
	"time"
)

// Until calls cond every interval until it returns nil (then Until returns nil) or
// timeout has passed (then Until returns cond's last error). cond runs at least once,
// and once more after the deadline has passed.
func Until(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
	}
}

// Eventually is Until that fails t when the timeout passes, naming what it waited for
// and cond's last error.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Until(timeout, interval, cond); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}
