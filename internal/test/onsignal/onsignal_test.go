package onsignal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "ONSIGNAL_TEST_HELPER_DIR"

// TestHelper is the program the tests below run: this test binary again. It registers
// two stops, a fast one that writes to standard error first and a slow one, reports it
// is ready on standard output, then waits for the signal.
func TestHelper(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper for the tests of this package")
	}
	Register(func(s os.Signal) {
		fmt.Fprintf(os.Stderr, "stopping on %v\n", s)
		_ = os.WriteFile(filepath.Join(dir, "fast"), []byte("stopped"), 0o644)
	})
	Register(func(os.Signal) {
		time.Sleep(500 * time.Millisecond) // a bench powering its nodes off takes a while
		_ = os.WriteFile(filepath.Join(dir, "slow"), []byte("stopped"), 0o644)
	})
	gone := Register(func(os.Signal) {
		_ = os.WriteFile(filepath.Join(dir, "unregistered"), []byte("ran"), 0o644)
	})
	gone()
	fmt.Println("ready")
	time.Sleep(time.Minute) // ended by the signal; the parent fails if it is not sent
}

// A test binary whose output reader is gone (a process group killed: tee dies with the
// binary) and which is then told to stop runs every registered stop to its end, the slow
// one too, although a stop writes to standard error first; an unregistered stop does not
// run; the exit code is 128+signal.
func TestEveryStopRunsAfterTheReaderIsGone(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("helper's first line %q, %v: want ready", line, err)
	}
	// The reader goes first, as tee does when the group is killed; then the signal.
	r.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("helper ended with %v, want exit code %d (the stops ran, then exit)", err, 128+int(syscall.SIGTERM))
	}
	for _, f := range []string{"fast", "slow"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the %s stop did not run to its end: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "unregistered")); err == nil {
		t.Error("an unregistered stop ran")
	}
}
