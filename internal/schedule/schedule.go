// Package schedule decides when periodic work runs: an EtcdBackup's backups and
// verifications, a cluster's defragmentation. A schedule is a cron expression (five
// fields or a macro such as @hourly, in a time zone) or a fixed interval (the v1beta2
// backupIntervalInSecond CoreOS had). It is pure: the controller passes the times it
// knows and acts on the answer.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	// The operator's image has no zoneinfo: time zones come with the binary.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// parser accepts what a CronJob's schedule accepts: minute hour day-of-month month
// day-of-week, or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly, @every D).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxCatchUpSteps bounds the walk to the most recent missed run: a schedule firing every
// minute, missed for a year, is half a million steps; past this many the run is simply
// recorded at now.
const maxCatchUpSteps = 100000

// Schedule is when backups run.
type Schedule struct {
	cron     cron.Schedule // nil for an interval
	interval time.Duration
	loc      *time.Location
}

// Parse reads a cron expression and an optional IANA time zone ("" is UTC). The time
// zone goes in its own field, as a CronJob's spec.timeZone does: a "TZ=" or "CRON_TZ="
// prefix in the expression is refused so that there is one way to say it.
func Parse(expr, timeZone string) (*Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, errors.New("the schedule is empty")
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("schedule %q: give the time zone in its own field, not as a prefix", expr)
	}
	loc := time.UTC
	if timeZone != "" {
		l, err := time.LoadLocation(timeZone)
		if err != nil || timeZone == "Local" {
			return nil, fmt.Errorf("time zone %q is not an IANA time zone name (such as Europe/Berlin)", timeZone)
		}
		loc = l
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q is not a cron schedule (minute hour day-of-month month day-of-week, or @hourly, @daily, @every 30m...): %v", expr, err)
	}
	if c, ok := s.(cron.ConstantDelaySchedule); ok && c.Delay < time.Minute {
		return nil, fmt.Errorf("schedule %q: runs must be at least a minute apart", expr)
	}
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, fmt.Errorf("schedule %q never fires (such as the 30th of February)", expr)
	}
	return &Schedule{cron: s, loc: loc}, nil
}

// Every is a schedule of a fixed interval, which must be positive.
func Every(interval time.Duration) *Schedule {
	return &Schedule{interval: interval, loc: time.UTC}
}

// Next is the first run strictly after t.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.cron == nil {
		return t.Add(s.interval)
	}
	return s.cron.Next(t.In(s.loc))
}

// Due says whether a run is due at now, given the scheduled time of the last run (zero
// if none ran) and the time the backup was created, from which the first run counts.
// When due, run is the scheduled time to record for this run: the most recent one not
// after now, so that after an outage that missed several runs exactly one catch-up run
// happens, and the next comes on schedule. Either way next is the run after that.
func (s *Schedule) Due(last, created, now time.Time) (due bool, run, next time.Time) {
	from := last
	if from.IsZero() {
		from = created
	}
	first := s.Next(from)
	if now.Before(first) {
		return false, time.Time{}, first
	}
	run = first
	for i := 0; ; i++ {
		n := s.Next(run)
		if n.After(now) {
			return true, run, n
		}
		if i == maxCatchUpSteps {
			return true, now, s.Next(now)
		}
		run = n
	}
}
