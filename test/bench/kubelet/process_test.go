package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs root (mount namespaces)")
		}
		t.Skip("needs root for mount namespaces")
	}
}

// TestShimMountsArePrivateToTheProcess runs a real process through the shim: the volume
// appears at its mountPath only inside the process's mount namespace, read-only mounts
// are read-only, the hostname is the pod's, and argv/env arrive unmodified.
func TestShimMountsArePrivateToTheProcess(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	vol := filepath.Join(dir, "vol")
	ro := filepath.Join(dir, "ro")
	target := filepath.Join(dir, "target") // does not exist on the host before
	roTarget := filepath.Join(dir, "rotarget")
	for _, d := range []string{vol, ro} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(vol, "f"), []byte("from-volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cat "$1/f"; echo; echo "$HELLO"; hostname; pwd; if touch "$2/x" 2>/dev/null; then echo rw; else echo ro; fi`
	spec := &shimSpec{
		Mounts:     []mountSpec{{Source: vol, Target: target}, {Source: ro, Target: roTarget, ReadOnly: true}},
		Hostname:   "m1-pod",
		ScratchDir: filepath.Join(dir, "scratch"),
		Path:       "/bin/sh",
		Argv:       []string{"sh", "-c", script, "sh", target, roTarget},
		Env:        []string{"HELLO=$(NOT_EXPANDED_HERE)", "PATH=/usr/bin:/bin"},
	}
	logPath := filepath.Join(dir, "out.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(spec, filepath.Join(dir, "spec.json"), out)
	out.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.signalGroup(syscall.SIGKILL) })
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("process did not finish")
	}
	got, _ := os.ReadFile(logPath)
	want := "from-volume\n$(NOT_EXPANDED_HERE)\nm1-pod\n" + filepath.Join(dir, "scratch") + "\nro\n"
	if p.exitCode != 0 || string(got) != want {
		t.Fatalf("exit %d, output:\n%s\nwant:\n%s", p.exitCode, got, want)
	}
	// On the host the mountpoint is an empty directory: the mount was private.
	ents, err := os.ReadDir(target)
	if err != nil || len(ents) != 0 {
		t.Fatalf("mount leaked to the host: %v %v", ents, err)
	}
	if h, _ := os.Hostname(); h == "m1-pod" {
		t.Fatal("hostname leaked to the host")
	}
}

func TestProcessExitCodesAndGroupKill(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	run := func(name, script string) *process {
		out, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		p, err := startProcess(&shimSpec{Path: "/bin/sh", Argv: []string{"sh", "-c", script}, ScratchDir: dir}, filepath.Join(dir, name+".json"), out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.signalGroup(syscall.SIGKILL) })
		return p
	}
	wait := func(p *process) {
		t.Helper()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatal("process did not exit")
		}
	}
	p := run("exit3", "exit 3")
	wait(p)
	if p.exitCode != 3 || p.signaled {
		t.Fatalf("exit 3: got %d signaled=%v", p.exitCode, p.signaled)
	}

	// A child in the background: killing the main process with SIGKILL gives 137 and
	// takes the child down with the group.
	p = run("tree", "sleep 300 & echo $! > "+filepath.Join(dir, "child.pid")+"; wait")
	childPID := 0
	deadline := time.Now().Add(10 * time.Second)
	for childPID == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil && strings.TrimSpace(string(b)) != "" {
			childPID = atoi(t, strings.TrimSpace(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if childPID == 0 {
		t.Fatal("child never started")
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(p)
	if p.exitCode != 137 || !p.signaled {
		t.Fatalf("SIGKILL: got %d signaled=%v", p.exitCode, p.signaled)
	}
	deadline = time.Now().Add(10 * time.Second)
	for syscall.Kill(childPID, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("child %d survived its container", childPID)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// stop(): SIGTERM is ignored by this process, so it is killed after the grace.
	trapped := filepath.Join(dir, "trapped")
	p = run("stubborn", "trap '' TERM; touch "+trapped+"; while :; do sleep 0.05; done")
	deadline = time.Now().Add(10 * time.Second)
	for _, err := os.Stat(trapped); err != nil; _, err = os.Stat(trapped) {
		if time.Now().After(deadline) {
			t.Fatal("trap never installed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	p.stop(500 * time.Millisecond)
	if el := time.Since(start); el < 500*time.Millisecond || p.exitCode != 137 {
		t.Fatalf("stop: exit %d after %v", p.exitCode, el)
	}
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}
