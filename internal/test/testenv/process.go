package testenv

import (
	"os"
	"syscall"
	"time"
)

// StopProcess stops a process the way a pod deletion does: SIGTERM (etcd hands off
// leadership, MinIO flushes), then SIGKILL if it has not exited after grace. done must be
// closed once the process has been reaped; StopProcess returns only after that, so no
// process outlives the caller. A process already reaped is left alone.
func StopProcess(p *os.Process, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	_ = p.Signal(syscall.SIGKILL)
	<-done
}
