package main

import (
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

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

func buildPause(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// catches reports whether process pid has a handler installed for sig (SigCgt in
// /proc/<pid>/status, a hex mask with bit sig-1 per signal).
func catches(pid int, sig syscall.Signal) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return mask&(1<<(uint(sig)-1)) != 0, err
		}
	}
	return false, errors.New("no SigCgt line")
}

// startReady runs pause with SIGINT ignored (inherited through exec), so that the Go
// runtime leaves SIGINT alone until signal.Notify asks for it: the moment pause (not
// the shell before its exec, which may catch SIGINT itself) shows SIGINT as caught, it
// has set up its handlers and any signal sent is handled, not fatal.
func startReady(t *testing.T, bin string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap '' INT; exec "$0"`, bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	poll.Eventually(t, 10*time.Second, 5*time.Millisecond, "pause to install its SIGINT handler", func() error {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil {
			t.Fatal(err)
		}
		ok, err := catches(pid, syscall.SIGINT)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || strings.TrimSpace(string(comm)) != "pause" {
			return fmt.Errorf("%s catches SIGINT: %v", strings.TrimSpace(string(comm)), ok)
		}
		return nil
	})
	return cmd
}

func TestPauseExitsZeroOnStopSignals(t *testing.T) {
	bin := buildPause(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := startReady(t, bin)
			// A SIGCHLD without children must not end it.
			if err := cmd.Process.Signal(syscall.SIGCHLD); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pause after %v: %v, want exit status 0", sig, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("pause still running 10s after %v", sig)
			}
		})
	}
}

// run keeps going after SIGCHLD and returns 0 on a stop signal. The channel is
// unbuffered, so each send completes only once run has taken the signal: the third send
// proves run survived the first two.
func TestRunStopsOnlyOnStopSignals(t *testing.T) {
	sigs := make(chan os.Signal)
	code := make(chan int, 1)
	go func() { code <- run(sigs) }()
	for _, sig := range []os.Signal{syscall.SIGCHLD, syscall.SIGCHLD, syscall.SIGTERM} {
		select {
		case c := <-code:
			t.Fatalf("run returned %d before %v", c, sig)
		case sigs <- sig:
		}
	}
	if c := <-code; c != 0 {
		t.Fatalf("run returned %d after SIGTERM, want 0", c)
	}
}

// reap collects exited children: a child that has exited and was not waited for is a
// zombie until reap runs, and gone afterwards.
func TestReapCollectsExitedChildren(t *testing.T) {
	var pids []int
	for range 3 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	for _, pid := range pids {
		// Wait until the child has exited (a zombie) without reaping it.
		poll.Eventually(t, 10*time.Second, 5*time.Millisecond, fmt.Sprintf("child %d to exit", pid), func() error {
			if s := state(t, pid); s != "Z" {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
	}
	if n := reap(); n != len(pids) {
		t.Errorf("reap() = %d, want %d", n, len(pids))
	}
	for _, pid := range pids {
		if s := state(t, pid); s != "" {
			t.Errorf("child %d still in state %q after reap", pid, s)
		}
	}
	if n := reap(); n != 0 {
		t.Errorf("second reap() = %d, want 0", n)
	}
}

// state is the process state letter of pid ("Z" for a zombie), "" if it does not exist.
func state(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) S ...: the state follows the last ')'.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	return strings.Fields(rest)[0]
}
