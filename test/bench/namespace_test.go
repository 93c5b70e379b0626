package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const envNSHelper = "BENCH_NAMESPACE_TEST_HELPER"

// TestNamespaceHelper is the program TestEnterNamespace runs: it enters the namespace,
// reports what it sees and exits with a code the parent must pass on.
func TestNamespaceHelper(t *testing.T) {
	if os.Getenv(envNSHelper) == "" {
		t.Skip("helper for TestEnterNamespace")
	}
	if err := EnterNamespace(); err != nil {
		fmt.Println("enter:", err)
		os.Exit(3)
	}
	hosts, _ := os.ReadFile("/etc/hosts")
	resolv, _ := os.ReadFile("/etc/resolv.conf")
	fmt.Printf("inside=%v hosts=%q resolv=%q\n", InNamespace(), hosts, resolv)
	os.Exit(7)
}

func TestEnterNamespace(t *testing.T) {
	if InNamespace() {
		t.Skip("already inside a bench namespace")
	}
	before, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamespaceHelper$")
	cmd.Env = append(os.Environ(), envNSHelper+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		t.Fatalf("helper exit = %v, want code 7 passed through; output:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"inside=true", "cluster DNS is CoreDNS", "nameserver " + ClusterDNSIP, "search default.svc.cluster.local svc.cluster.local cluster.local"} {
		if !strings.Contains(got, want) {
			t.Errorf("child output lacks %q:\n%s", want, got)
		}
	}
	after, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the host's /etc/hosts changed")
	}
}

const envPanicHelper = "BENCH_NAMESPACE_PANIC_HELPER"

// TestNamespacePanicHelper is the program TestParentSweepsAfterChildPanics runs: inside
// the namespace it makes a bench's cgroup tree with a process in it that outlives it (as
// a node's containerd shim does), prints both, and panics as go test's -test.timeout
// does, so that no cleanup of its own runs.
func TestNamespacePanicHelper(t *testing.T) {
	if os.Getenv(envPanicHelper) == "" {
		t.Skip("helper for TestParentSweepsAfterChildPanics")
	}
	if err := EnterNamespace(); err != nil {
		fmt.Println("enter:", err)
		os.Exit(3)
	}
	tree, err := newCgroupTree(fmt.Sprintf("bench-%d-%d", os.Getpid(), 900))
	if err != nil {
		fmt.Println("tree:", err)
		os.Exit(4)
	}
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		fmt.Println("sleep:", err)
		os.Exit(5)
	}
	procs := filepath.Join(cgroupV1Root, "memory", tree.Rel, "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		fmt.Println("move:", err)
		os.Exit(6)
	}
	fmt.Printf("tree=%s pid=%d\n", tree.Rel, sleep.Process.Pid)
	panic("test timed out (simulated)")
}

// A test process that dies without its cleanup (a panic) leaves no bench behind: the
// parent outside the namespace sweeps its cgroup trees once it is gone.
func TestParentSweepsAfterChildPanics(t *testing.T) {
	if InNamespace() {
		t.Skip("already inside a bench namespace")
	}
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	if _, err := ownCgroup(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamespacePanicHelper$")
	cmd.Env = append(os.Environ(), envPanicHelper+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("helper exit = %v, want code 2 (a panic) passed through; output:\n%s", err, out.String())
	}
	var rel string
	var pid int
	for _, line := range strings.Split(out.String(), "\n") {
		if _, err := fmt.Sscanf(line, "tree=%s pid=%d", &rel, &pid); err == nil {
			break
		}
	}
	if rel == "" || pid == 0 {
		t.Fatalf("the helper did not make its tree; output:\n%s", out.String())
	}
	t.Cleanup(func() { // if the sweep failed, do not leave it to the next bench
		_ = (&cgroupTree{Rel: rel}).remove()
	})
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] != "Z" && f[2] != "X" {
			t.Errorf("the process left in the dead test's cgroup still runs (state %s)", f[2])
		}
	}
	for _, h := range benchHierarchies {
		d := filepath.Join(cgroupV1Root, h, rel)
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the dead test's cgroup %s is still there", d)
		}
	}
}
