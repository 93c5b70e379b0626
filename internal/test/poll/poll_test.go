package poll

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := Until(time.Minute, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("err %v after %d calls, want nil after 3", err, calls)
	}
}

func TestUntilReturnsTheLastErrorAfterTheTimeout(t *testing.T) {
	calls := 0
	start := time.Now()
	err := Until(20*time.Millisecond, 5*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("call %d", calls)
	})
	if err == nil || err.Error() != fmt.Sprintf("call %d", calls) {
		t.Errorf("err %v, want the last of %d calls' errors", err, calls)
	}
	if took := time.Since(start); took < 20*time.Millisecond || calls < 2 {
		t.Errorf("gave up after %v and %d calls", took, calls)
	}
}

func TestUntilChecksOnceEvenWithoutTime(t *testing.T) {
	calls := 0
	if err := Until(0, time.Hour, func() error { calls++; return nil }); err != nil || calls != 1 {
		t.Errorf("err %v after %d calls", err, calls)
	}
}

func TestEventuallyFailsNamingWhatItWaitedFor(t *testing.T) {
	r := &recorder{}
	func() {
		defer func() { _ = recover() }()
		Eventually(r, time.Millisecond, time.Millisecond, "the moon", func() error { return errors.New("still new") })
	}()
	if !strings.Contains(r.fatal, "the moon") || !strings.Contains(r.fatal, "still new") {
		t.Errorf("failure %q, want what and the last error", r.fatal)
	}
	r = &recorder{}
	Eventually(r, time.Millisecond, time.Millisecond, "nothing", func() error { return nil })
	if r.fatal != "" {
		t.Errorf("failed although the condition held: %q", r.fatal)
	}
}

// recorder keeps the message of a Fatalf instead of ending the real test.
type recorder struct {
	testing.TB // nil: any other method panics
	fatal      string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(r)
}
