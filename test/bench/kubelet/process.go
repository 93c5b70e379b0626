package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is one started container (or exec probe) process: the shim that became the
// container's executable, leader of its own process group.
type process struct {
	pid      int
	started  time.Time
	done     chan struct{} // closed after exit and after the rest of its group was killed
	exitCode int           // valid after done; 128+signal for a signalled process
	signaled bool
}

// startProcess writes spec to specPath and starts the shim for it with output to out.
// The child gets its own process group (so the whole container can be signalled and
// cleaned up), a private mount and UTS namespace, and SIGKILL should the kubelet die.
func startProcess(spec *shimSpec, specPath string, out *os.File) (*process, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(specPath, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"bench-kubelet-shim"}
	cmd.Env = []string{shimEnvVar + "=" + specPath}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:      true,
		Pdeathsig:    syscall.SIGKILL,
		Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start shim: %w", err)
	}
	p := &process{pid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		// The container's other processes die with its main process, as they would when
		// a container's PID 1 exits and its PID namespace is torn down.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			ws := ee.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				p.signaled = true
				p.exitCode = 128 + int(ws.Signal())
			} else {
				p.exitCode = ws.ExitStatus()
			}
		default:
			p.exitCode = 128
		}
		close(p.done)
	}()
	return p, nil
}

// signal sends sig to the main process only (like a runtime signalling PID 1).
func (p *process) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("process %d already exited", p.pid)
	default:
	}
	return syscall.Kill(p.pid, sig)
}

// signalGroup sends sig to every process of the container.
func (p *process) signalGroup(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.pid, sig)
	}
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs the group and waits for the exit.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	// A stopped process cannot handle SIGTERM; resume it as a runtime would.
	_ = syscall.Kill(-p.pid, syscall.SIGCONT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.done
}
