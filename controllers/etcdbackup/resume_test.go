package etcdbackup

import (
	"testing"
	"time"
)

// TestStoredForRun: which object times belong to the run that is due.
func TestStoredForRun(t *testing.T) {
	due := testStart
	last := testStart.Add(-time.Hour)
	now := testStart.Add(time.Minute)
	for _, tc := range []struct {
		name        string
		taken, last time.Time
		want        bool
	}{
		{"taken after the run became due", due.Add(3 * time.Second), last, true},
		{"taken in the due second (names drop sub-seconds)", due.Add(400 * time.Millisecond), last, true},
		{"taken before the run was due", due.Add(-time.Second), last, false},
		{"the last recorded run's own object", last, last, false},
		{"first run, nothing recorded", due, time.Time{}, true},
		{"from the future (a clock skewed writer)", now.Add(time.Hour), last, false},
	} {
		if got := storedForRun(tc.taken, due, tc.last, now); got != tc.want {
			t.Errorf("%s: storedForRun = %v, want %v", tc.name, got, tc.want)
		}
	}
}
