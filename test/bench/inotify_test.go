package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// A reservation is written only when the instances in use, the others' reservations and
// the need fit under the limit less the slack; a dead process's reservation is dropped.
func TestInotifyReservation(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, strconv.Itoa(os.Getpid()))

	// A live process other than this one (a child that waits) holds 30.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	other := filepath.Join(dir, strconv.Itoa(child.Process.Pid))
	if err := os.WriteFile(other, []byte("30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A process that is gone held 1000: ignored and removed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, strconv.Itoa(dead.Process.Pid))
	if err := os.WriteFile(gone, []byte("1000"), 0o644); err != nil {
		t.Fatal(err)
	}

	// 50 in use (fixed: the machine's own count changes as other benches start), 30
	// reserved by the other process: room for exactly 10 more.
	fixed := func() inotifyUse { return inotifyUse{total: 50, byComm: map[string]int{"kubelet": 50}} }
	limit := 50 + 30 + 10 + inotifySlack

	ok, _, reserved, err := tryReserveInotify(dir, mine, 11, limit, fixed)
	if err != nil {
		t.Fatal(err)
	}
	if ok || reserved != 30 {
		t.Fatalf("need 11 with room for 10: ok=%v reserved=%d, want refused with 30 reserved by the other process", ok, reserved)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Fatalf("a refused reservation was written: %v", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("a dead process's reservation was kept: %v", err)
	}

	ok, _, _, err = tryReserveInotify(dir, mine, 10, limit, fixed)
	if err != nil || !ok {
		t.Fatalf("need 10 with room for 10: ok=%v err=%v", ok, err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "10" {
		t.Fatalf("reservation file: %q, %v", b, err)
	}

	// Once the other process exits, its reservation no longer counts.
	_ = child.Process.Kill()
	_ = child.Wait()
	if n, err := otherReservations(dir, mine); err != nil || n != 0 {
		t.Fatalf("reservations after the other process exited: %d, %v", n, err)
	}
}

// The instances this process opens are counted.
func TestCountInotifySeesOwnInstances(t *testing.T) {
	before := countInotify()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	after := countInotify()
	if after.self != before.self+1 {
		t.Fatalf("this process's instances: %d before, %d after opening one", before.self, after.self)
	}
}
