package benchmark

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on every Linux
// architecture this runs on (the kernel exports it as sysconf(_SC_CLK_TCK)).
const clockTick = 10 * time.Millisecond

// procCPU is the user plus system CPU time process pid has used so far, to 10 ms.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: fields are counted after it.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		b.Fatalf("/proc/%d/stat: no command name in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state(3) ... utime(14) stime(15), i.e. indexes 11 and 12 here.
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, field := range f[11:13] {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}

// selfCPU is the user plus system CPU time this process has used so far.
func selfCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
