package v1beta2

import (
	"math"
	"time"
)

// SecondsToDuration converts a count of seconds from the API to a time.Duration,
// saturating at the largest and smallest Duration: multiplying by time.Second would wrap
// an interval of centuries around to a few milliseconds (or a negative value).
func SecondsToDuration(s int64) time.Duration {
	const maxSeconds = int64(math.MaxInt64 / int64(time.Second))
	switch {
	case s > maxSeconds:
		return math.MaxInt64
	case s < -maxSeconds:
		return math.MinInt64
	}
	return time.Duration(s) * time.Second
}

// Timeout is timeoutInSecond as a Duration (0: unset), saturated.
func (p BackupPolicy) Timeout() time.Duration { return SecondsToDuration(p.TimeoutInSecond) }

// Interval is backupIntervalInSecond as a Duration (0: one-shot), saturated.
func (p BackupPolicy) Interval() time.Duration { return SecondsToDuration(p.BackupIntervalInSecond) }

// MaxAge is MaxAgeInSecond as a duration (0: no age limit).
func (p BackupPolicy) MaxAge() time.Duration { return SecondsToDuration(p.MaxAgeInSecond) }
