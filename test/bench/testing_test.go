package bench

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

const signalHelperEnv = "BENCH_TEST_SIGNAL_HELPER_MARKER"

// TestStopOnSignalOutlivesItsReader: a test binary whose output reader is gone (a
// process group killed: tee dies with the binary) and which is then told to stop still
// runs its whole stop, although stop writes to standard error first. The helper is this
// test binary run again; it reports it is ready on standard output, then waits.
func TestStopOnSignalOutlivesItsReader(t *testing.T) {
	if marker := os.Getenv(signalHelperEnv); marker != "" {
		stopOnSignal(func(s os.Signal) {
			fmt.Fprintf(os.Stderr, "bench: %v: stopping\n", s)
			_ = os.WriteFile(marker, []byte("stopped"), 0o644)
		})
		fmt.Println("ready")
		time.Sleep(time.Minute) // ended by the signal; the parent fails if it is not sent
		return
	}
	marker := filepath.Join(t.TempDir(), "stopped")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopOnSignalOutlivesItsReader$")
	cmd.Env = append(os.Environ(), signalHelperEnv+"="+marker)
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
		t.Errorf("helper ended with %v, want exit code %d (stop ran, then exit)", err, 128+int(syscall.SIGTERM))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("stop did not run to its end after its write to a pipe nobody reads: %v", err)
	}
}
