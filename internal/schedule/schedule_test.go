package schedule

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 3, 10, 17, 0, 0, time.UTC)

func mustParse(t *testing.T, expr, tz string) *Schedule {
	t.Helper()
	s, err := Parse(expr, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", expr, tz, err)
	}
	return s
}

func TestParseAcceptsWhatACronJobAccepts(t *testing.T) {
	for expr, want := range map[string]time.Time{
		"*/30 * * * *":    time.Date(2026, 12, 3, 10, 30, 0, 0, time.UTC),
		"0 2 * * *":       time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC),
		"@hourly":         time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC),
		"@daily":          time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC),
		"@every 45m":      t0.Add(45 * time.Minute),
		"0 0 1 * MON-FRI": time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), // the 1st OR a weekday (Friday the 4th), as cron has it
	} {
		if got := mustParse(t, expr, "").Next(t0); !got.Equal(want) {
			t.Errorf("%q: next after %s = %s, want %s", expr, t0, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ expr, tz, want string }{
		{"", "", "empty"},
		{"* * * *", "", "not a cron schedule"},
		{"0 0 * * * *", "", "not a cron schedule"}, // a seconds field
		{"61 * * * *", "", "not a cron schedule"},
		{"@every 10s", "", "a minute apart"},
		{"0 0 30 2 *", "", "never fires"},
		{"TZ=Europe/Berlin 0 2 * * *", "", "own field"},
		{"0 2 * * *", "Mars/Olympus", "IANA"},
		{"0 2 * * *", "Local", "IANA"},
	} {
		_, err := Parse(tc.expr, tc.tz)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q): err %v, want one saying %q", tc.expr, tc.tz, err, tc.want)
		}
	}
}

// "02:00 daily" in Berlin is 01:00 UTC in winter and 00:00 UTC in summer.
func TestTimeZone(t *testing.T) {
	s := mustParse(t, "0 2 * * *", "Europe/Berlin")
	if got := s.Next(t0); !got.Equal(time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("winter: %s", got.UTC())
	}
	if got := s.Next(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("summer: %s", got.UTC())
	}
}

func TestDue(t *testing.T) {
	hourly := mustParse(t, "@hourly", "")
	created := time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		s         *Schedule
		last, now time.Time
		due       bool
		run, next time.Time
	}{
		{"new, before the first slot", hourly, time.Time{}, created.Add(10 * time.Minute), false, time.Time{}, at(10, 0)},
		{"new, first slot reached", hourly, time.Time{}, at(10, 0), true, at(10, 0), at(11, 0)},
		{"ran at 10:00, now 10:59", hourly, at(10, 0), at(10, 59), false, time.Time{}, at(11, 0)},
		{"ran at 10:00, now 11:05", hourly, at(10, 0), at(11, 5), true, at(11, 0), at(12, 0)},
		// An operator outage from 10:30 to 15:10 missed four runs: one catch-up, recorded
		// as the 15:00 run, and the next at 16:00, not a burst of four.
		{"outage", hourly, at(10, 0), at(15, 10), true, at(15, 0), at(16, 0)},
		{"interval", Every(90 * time.Minute), at(10, 0), at(11, 29), false, time.Time{}, at(11, 30)},
		{"interval missed", Every(90 * time.Minute), at(10, 0), at(15, 10), true, at(14, 30), at(16, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, run, next := tc.s.Due(tc.last, created, tc.now)
			if due != tc.due || !run.Equal(tc.run) || !next.Equal(tc.next) {
				t.Errorf("Due = %v, run %s, next %s; want %v, %s, %s", due, run, next, tc.due, tc.run, tc.next)
			}
		})
	}
}

// A schedule firing every minute, missed for years, still answers at once with one run.
func TestDueAfterAVeryLongOutage(t *testing.T) {
	s := mustParse(t, "* * * * *", "")
	now := at(10, 0).AddDate(5, 0, 0)
	due, run, next := s.Due(at(10, 0), at(9, 0), now)
	if !due || run.After(now) || !next.After(now) {
		t.Errorf("Due = %v, run %s, next %s at %s", due, run, next, now)
	}
}

func at(h, m int) time.Time { return time.Date(2026, 12, 3, h, m, 0, 0, time.UTC) }
