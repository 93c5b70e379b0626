package benchmark

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// cpuPlacement pins the processes of a benchmark to CPUs, to model a store that runs on
// machines of its own on a machine that has only a few cores.
type cpuPlacement struct {
	all unix.CPUSet // this process's CPUs when the benchmark started
}

func newCPUPlacement(b *testing.B) cpuPlacement {
	b.Helper()
	var p cpuPlacement
	if err := unix.SchedGetaffinity(0, &p.all); err != nil {
		b.Fatal(err)
	}
	return p
}

// cpus returns the first n of the benchmark's CPUs, or false if it has fewer.
func (p cpuPlacement) cpus(n int) ([]int, bool) {
	var out []int
	for c := 0; c < len(p.all)*64 && len(out) < n; c++ {
		if p.all.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, len(out) == n
}

// pin sets the CPU affinity of every thread of process pid to cpus (all of the
// benchmark's CPUs if none are given). Threads created later inherit the affinity of
// the thread that creates them, and so do child processes: pinning this process pins
// the etcdctl it starts afterwards.
func (p cpuPlacement) pin(b *testing.B, pid int, cpus ...int) {
	b.Helper()
	set := p.all
	if len(cpus) > 0 {
		set.Zero()
		for _, c := range cpus {
			set.Set(c)
		}
	}
	// Twice: a thread that was not pinned yet may have started another during the first
	// pass; that one inherited the old affinity.
	for range 2 {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				b.Fatalf("pin thread %d of process %d: %v", tid, pid, err)
			}
		}
	}
}
