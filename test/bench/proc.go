package bench

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// process is one control-plane binary the bench started, with its output in a file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has been reaped
	err  error         // Wait's result, valid after done
}

// startProcess runs bin with args, stdout+stderr appended to dir/logs/<name>.log.
func startProcess(dir, name, bin string, args ...string) (*process, error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A dying bench (panic, os.Exit in a test) must not leave an apiserver behind.
		Pdeathsig: syscall.SIGKILL,
		// Own process group: a Ctrl-C on the terminal reaches the bench, which then
		// stops these in order, rather than everything dying at once mid-write.
		Setpgid: true,
	}
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pdeathsig fires when the OS thread that forked the child exits, not the process
// (see prctl(2)). Go retires threads that end locked (code that does setns does
// that on purpose), so every start goes through one locked thread that lives forever.
var (
	spawnOnce sync.Once
	spawnReq  chan spawnRequest
)

type spawnRequest struct {
	cmd *exec.Cmd
	err chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReq = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread must outlive the children
			for r := range spawnReq {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := spawnRequest{cmd: cmd, err: make(chan error, 1)}
	spawnReq <- r
	return <-r.err
}

// exited reports whether the process is gone, with a description if so.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("%s exited (%v); see %s%s", p.name, p.err, p.log, tail(p.log, 1500))
	default:
		return false, nil
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs; it always reaps.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	testenv.StopProcess(p.cmd.Process, p.done, grace)
}

// tail returns the end of a log file for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	return "\n--- tail of " + filepath.Base(path) + " ---\n" + string(buf)
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1. The listeners are held
// until all n are picked so the kernel cannot hand the same port out twice.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// errStopped is returned by waits interrupted by Stop or a dead process.
var errStopped = errors.New("bench stopped")
