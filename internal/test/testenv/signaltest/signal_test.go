// Package signaltest checks that a test process ended by a signal leaves no envtest
// running (testenv.StartEnvtest, internal/test/onsignal).
package signaltest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

const helperEnv = "SIGNALTEST_HELPER"

// TestEnvtestHelper is the program TestSignalStopsEnvtest runs: it starts an envtest,
// reports it is ready and waits for the signal.
func TestEnvtestHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper for TestSignalStopsEnvtest")
	}
	testenv.StartEnvtest(t, &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)})
	fmt.Println("ready")
	time.Sleep(2 * time.Minute) // ended by the signal; the parent fails if it is not sent
}

// A test process told to stop while its envtest runs (its output's reader gone first,
// as when a CI job's process group is killed) stops envtest's etcd and kube-apiserver
// before it exits; they used to outlive it.
func TestSignalStopsEnvtest(t *testing.T) {
	testenv.EnvtestAssets(t) // skips (fails under CI) without the binaries
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvtestHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(r)
	ready := false
	for !ready && lines.Scan() {
		ready = lines.Text() == "ready"
	}
	if !ready {
		t.Fatalf("the helper ended before its envtest was ready: %v", cmd.Wait())
	}
	children := childrenOf(cmd.Process.Pid)
	names := map[string]bool{}
	for _, pid := range children {
		names[comm(pid)] = true
	}
	if !names["etcd"] || !names["kube-apiserver"] {
		t.Fatalf("the helper's children are %v (%v), want envtest's etcd and kube-apiserver", children, names)
	}
	t.Cleanup(func() { // what a failed stop left is not left to the next test
		for _, pid := range children {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	r.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("helper ended with %v, want exit code %d", err, 128+int(syscall.SIGTERM))
	}
	// Killed children are reaped by whoever adopted them; give that a moment.
	poll.Eventually(t, 10*time.Second, 100*time.Millisecond, "envtest's processes gone", func() error {
		var left []string
		for _, pid := range children {
			if alive(pid) {
				left = append(left, fmt.Sprintf("%d (%s)", pid, comm(pid)))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still running: %s", strings.Join(left, ", "))
		}
		return nil
	})
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		child, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// statFields are the fields of /proc/pid/stat after the command name (state, ppid, ...);
// nil if the process is gone. The name is in parentheses and may hold spaces, so the
// fields are those after the last ')'.
func statFields(pid int) []string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
}

func comm(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(raw))
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
