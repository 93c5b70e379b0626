package v1beta2

import (
	"math"
	"testing"
	"time"
)

func TestSecondsToDurationSaturates(t *testing.T) {
	maxWhole := int64(math.MaxInt64 / int64(time.Second))
	cases := []struct {
		in   int64
		want time.Duration
	}{
		{0, 0},
		{1, time.Second},
		{-1, -time.Second},
		{MaxBackupIntervalInSecond, 366 * 24 * time.Hour},
		{maxWhole, time.Duration(maxWhole) * time.Second},
		{maxWhole + 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
		{1 << 62, math.MaxInt64},
		{-maxWhole - 1, math.MinInt64},
		{math.MinInt64, math.MinInt64},
	}
	for _, c := range cases {
		if got := SecondsToDuration(c.in); got != c.want {
			t.Errorf("SecondsToDuration(%d) = %v, want %v", c.in, got, c.want)
		}
	}
}

// An interval of years must stay an interval of at least a year, whatever was stored
// before the admission maximum existed: time.Duration(s)*time.Second would wrap these to
// a few seconds or a negative value.
func TestBackupPolicyDurationsNeverShrink(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, s := range []int64{MaxBackupIntervalInSecond, 300 * 365 * 24 * 3600, 1 << 62, math.MaxInt64} {
		p := BackupPolicy{TimeoutInSecond: s, BackupIntervalInSecond: s}
		if p.Interval() < year || p.Timeout() < year {
			t.Errorf("%d s became interval %v, timeout %v", s, p.Interval(), p.Timeout())
		}
	}
}
