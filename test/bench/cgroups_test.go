package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// None of these tests creates, changes or removes a cgroup.

func TestStaleTreeNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		pid  string // "" = must not match
	}{
		{"bench-123-4", "123"},
		{"bench-1-0", "1"},
		{fmt.Sprintf("bench-%d-%d", os.Getpid(), 17), fmt.Sprint(os.Getpid())}, // as nodes.go names a tree
		{"bench-x-1", ""},
		{"bench-123", ""},
		{"other-123-4", ""},
		{"xbench-123-4", ""},
		{"bench-123-4x", ""},
		{"bench-123-", ""},
		{"bench--4", ""},
		{"bench-123-4/node-1", ""},
		{"bench-node-1", ""}, // a node's cgroup, never a bench's tree
		{"bench-ns-123", ""},
	} {
		m := staleTree.FindStringSubmatch(tc.name)
		switch {
		case tc.pid == "" && m != nil:
			t.Errorf("%q matches (pid %q); it is no bench tree", tc.name, m[1])
		case tc.pid != "" && m == nil:
			t.Errorf("%q does not match", tc.name)
		case tc.pid != "" && m[1] != tc.pid:
			t.Errorf("%q: pid %q, want %q", tc.name, m[1], tc.pid)
		}
	}
}

func TestCgroupOwn(t *testing.T) {
	own, err := ownCgroup()
	if err != nil {
		t.Skipf("no cgroup v1 memory hierarchy: %v", err)
	}
	if !strings.HasPrefix(own, "/") || filepath.Clean(own) != own {
		t.Fatalf("ownCgroup() = %q, want a clean absolute path", own)
	}
	// It must name a directory that exists in the memory hierarchy (sweepStaleTrees lists it).
	mem := filepath.Join(cgroupV1Root, "memory")
	if _, err := os.Stat(mem); err != nil {
		t.Skipf("no %s: %v", mem, err)
	}
	if st, err := os.Stat(filepath.Join(mem, own)); err != nil || !st.IsDir() {
		t.Errorf("ownCgroup() = %q, but %s is not a directory: %v", own, filepath.Join(mem, own), err)
	}
}

func TestCgroupProcsFiles(t *testing.T) {
	tree := &cgroupTree{Rel: "/machine/abc/bench-42-1"}
	for _, rel := range []string{"", "bench-node-1", "bench-node-1/kubepods"} {
		got := tree.procsFiles(rel)
		if len(got) != len(benchHierarchies) {
			t.Fatalf("procsFiles(%q): %d files for %d hierarchies", rel, len(got), len(benchHierarchies))
		}
		seen := map[string]bool{}
		for i, f := range got {
			want := filepath.Join(cgroupV1Root, benchHierarchies[i], tree.Rel, rel, "cgroup.procs")
			if f != want || seen[f] {
				t.Errorf("procsFiles(%q)[%d] = %q, want %q (once)", rel, i, f, want)
			}
			seen[f] = true
		}
	}
}

// A tree that does not exist has no processes, and killing them is done at once.
func TestCgroupMissingTree(t *testing.T) {
	tree := &cgroupTree{Rel: "/no-such-bench-cgroup/bench-0-0"}
	if _, err := os.Stat(filepath.Join(cgroupV1Root, "memory", tree.Rel)); err == nil {
		t.Skip("the made-up tree exists")
	}
	if pids := tree.pids(""); len(pids) != 0 {
		t.Errorf("pids of a missing tree = %v", pids)
	}
	start := time.Now()
	if err := tree.killAll("", time.Second); err != nil {
		t.Errorf("killAll of a missing tree: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("killAll of a missing tree took %v", d)
	}
	var none *cgroupTree
	if err := none.remove(); err != nil {
		t.Errorf("nil tree remove: %v", err)
	}
}

// cpuacct.usage of this process's own cgroup grows by at least the CPU this process
// burns between two readings (other processes there only add to it).
func TestReadCPUUsageCountsThisProcess(t *testing.T) {
	own, err := ownCgroupIn("cpuacct")
	if err != nil {
		t.Skip(err)
	}
	dir := filepath.Join(cgroupV1Root, "cpuacct", own)
	before, err := readCPUUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	self0 := processCPU(t)
	for x, end := uint64(1), time.Now().Add(100*time.Millisecond); time.Now().Before(end); x = x*6364136223846793005 + 1 {
		_ = x
	}
	burnt := processCPU(t) - self0
	after, err := readCPUUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// getrusage counts in ticks here and there; allow one 10 ms tick of difference.
	if after-before < burnt-10*time.Millisecond {
		t.Errorf("cpuacct.usage of %s grew by %v while this process alone used %v", dir, after-before, burnt)
	}
}

func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestReadCPUUsageRejectsWhatIsNotACount(t *testing.T) {
	for _, content := range []string{"", "12x\n", "-5\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cpuacct.usage"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if d, err := readCPUUsage(dir); err == nil {
			t.Errorf("cpuacct.usage %q read as %v, want an error", content, d)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpuacct.usage"), []byte("1500000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := readCPUUsage(dir); err != nil || d != 1500*time.Millisecond {
		t.Errorf("cpuacct.usage 1500000000 read as %v, %v; want 1.5s", d, err)
	}
}
