// Command pause is the process of the bench's pod sandboxes (the image bench.local/pause).
// It holds the pod's namespaces open and does nothing else, as the Kubernetes pause
// container does: as PID 1 of a pod that shares its PID namespace it reaps the orphans
// that are re-parented to it, and it exits 0 on SIGINT or SIGTERM, which is how the
// runtime stops a sandbox. Build it with CGO_ENABLED=0: the image has no C library.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	// SIGINT last: once its handler is installed, the others are too (the test waits
	// for that to know a signal it sends is handled, not fatal).
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(sigs))
}

// run handles signals until a stop signal arrives and returns the exit code.
func run(sigs <-chan os.Signal) int {
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return 0
		}
		reap()
	}
	return 0
}

// reap collects every child that has exited, so none stays a zombie. Signals coalesce
// (one SIGCHLD may stand for several exits), hence the loop until no child is left to
// collect. It returns the number of children reaped.
func reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return n
		}
		n++
	}
}
