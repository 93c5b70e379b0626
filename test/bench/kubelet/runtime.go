package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var errAborted = errors.New("pod is stopping")

func isGoneErr(err error) bool {
	// NotFound: already deleted. Conflict: the UID precondition failed, i.e. a new pod of
	// the same name exists and ours is gone.
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}

// podHostname is the hostname the pod's processes see (spec.hostname or the pod name).
func podHostname(pod *v1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// baseEnv is what every container starts with before its own env: what an image and
// the kubelet would provide (PATH, HOSTNAME, the API service) plus bench extras.
func (w *podWorker) baseEnv(pod *v1.Pod) []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + podHostname(pod),
		"HOME=/root",
	}
	if h, p := w.k.cfg.APIServerHost, w.k.cfg.APIServerPort; h != "" && p != 0 {
		ps := strconv.Itoa(p)
		env = append(env,
			"KUBERNETES_SERVICE_HOST="+h,
			"KUBERNETES_SERVICE_PORT="+ps,
			"KUBERNETES_SERVICE_PORT_HTTPS="+ps,
			"KUBERNETES_PORT=tcp://"+h+":"+ps,
		)
	}
	return append(env, w.k.cfg.ExtraEnv...)
}

// containerShimSpec resolves a container (or an exec probe command run in its view)
// into what the shim executes.
func (w *podWorker) containerShimSpec(c *containerRuntime, command []string, args []string) (*shimSpec, error) {
	pc := w.podContext()
	w.mu.Lock()
	dirs := w.volDirs
	w.mu.Unlock()
	env, err := pc.containerEnv(w.ctx, w.baseEnv(pc.pod), &c.spec)
	if err != nil {
		return nil, err
	}
	lookup := envLookup(env)
	var argv []string
	var path string
	if len(command) > 0 {
		cmd0 := expandVars(command[0], lookup)
		path, err = w.k.cfg.ResolveImage(c.spec.Image, cmd0)
		argv = append(argv, cmd0)
		for _, a := range command[1:] {
			argv = append(argv, expandVars(a, lookup))
		}
	} else {
		path, err = w.k.cfg.ResolveImage(c.spec.Image, "")
		argv = append(argv, path)
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", c.spec.Image, err)
	}
	for _, a := range args {
		argv = append(argv, expandVars(a, lookup))
	}
	mounts, err := containerMounts(&c.spec, dirs, lookup)
	if err != nil {
		return nil, err
	}
	// The termination message file: empty at each start, bind-mounted at the
	// container's terminationMessagePath, read into the terminated state at exit.
	if err := os.WriteFile(terminationLogPath(w, c), nil, 0o644); err != nil {
		return nil, err
	}
	mounts = append(mounts, mountSpec{Source: terminationLogPath(w, c), Target: terminationMessagePath(&c.spec)})
	return &shimSpec{
		Mounts:     mounts,
		Hostname:   podHostname(pc.pod),
		Dir:        c.spec.WorkingDir,
		ScratchDir: filepath.Join(w.dir, "containers", c.spec.Name),
		Path:       path,
		Argv:       argv,
		Env:        env,
	}, nil
}

// runOnce starts the container once and waits for its process to end. ran is how long
// it ran; startErr reports a container that could not be started.
func (w *podWorker) runOnce(c *containerRuntime) (code int, ran time.Duration, startErr error) {
	if !w.waitNodeUp() || w.isDeleting() {
		return 0, 0, errAborted
	}
	spec, err := w.containerShimSpec(c, c.spec.Command, c.spec.Args)
	if err != nil {
		w.log.Info("container cannot start", "container", c.spec.Name, "err", err.Error())
		return 0, 0, err
	}
	out, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, 0, err
	}
	w.mu.Lock()
	specPath := filepath.Join(w.dir, "shim", fmt.Sprintf("%s-%d.json", c.spec.Name, c.runs))
	w.mu.Unlock()
	proc, err := startProcess(spec, specPath, out)
	out.Close()
	if err != nil {
		return 0, 0, err
	}
	w.mu.Lock()
	if c.runs > 0 {
		c.restarts++
	}
	c.runs++
	c.proc = proc
	c.state = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(proc.started)}}
	c.started = c.spec.StartupProbe == nil
	c.ready = !c.init && c.started && c.spec.ReadinessProbe == nil
	if c.sidecar {
		c.ready = c.started && c.spec.ReadinessProbe == nil
	}
	w.mu.Unlock()
	if w.node.isDown() {
		// NodeDown raced with this start; a dead machine runs nothing.
		proc.signalGroup(syscall.SIGKILL)
	}
	w.log.Info("container started", "container", c.spec.Name, "pid", proc.pid, "restarts", c.restarts)
	w.changed()

	probeCtx, cancelProbes := context.WithCancel(w.ctx)
	w.startProbes(probeCtx, c, proc)
	select {
	case <-proc.done:
	case <-w.deleting:
		w.stopProcess(proc, w.gracePeriod())
	case <-w.ctx.Done():
		proc.signalGroup(syscall.SIGKILL)
		<-proc.done
	}
	cancelProbes()
	finished := time.Now()
	reason := "Completed"
	if proc.exitCode != 0 {
		reason = "Error"
	}
	msg := terminationMessage(w, c, proc.exitCode)
	w.mu.Lock()
	c.state = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode:    int32(proc.exitCode),
		Reason:      reason,
		Message:     msg,
		StartedAt:   metav1.NewTime(proc.started),
		FinishedAt:  metav1.NewTime(finished),
		ContainerID: containerID(w, c),
	}}
	c.ready, c.started = false, false
	w.mu.Unlock()
	w.log.Info("container exited", "container", c.spec.Name, "exitCode", proc.exitCode)
	w.changed()
	return proc.exitCode, finished.Sub(proc.started), nil
}

// stopProcess is SIGTERM, up to grace, SIGKILL; the kubelet stopping cuts it short.
func (w *podWorker) stopProcess(p *process, grace time.Duration) {
	stopped := make(chan struct{})
	go func() { p.stop(grace); close(stopped) }()
	select {
	case <-stopped:
	case <-w.ctx.Done():
		p.signalGroup(syscall.SIGKILL)
		<-stopped
	}
}

func containerID(w *podWorker, c *containerRuntime) string {
	return fmt.Sprintf("bench://%s-%s-%d", w.uid, c.spec.Name, c.runs)
}

// startProbes runs the startup probe, then liveness and readiness, for one run of c.
func (w *podWorker) startProbes(ctx context.Context, c *containerRuntime, proc *process) {
	w.mu.Lock()
	podIP := w.podIP
	w.mu.Unlock()
	execProbe := func(ctx context.Context, cmd []string) error { return w.execInContainer(ctx, c, cmd) }
	checker := func(p *v1.Probe) func(context.Context) error {
		check, err := probeChecker(p, &c.spec, podIP, execProbe)
		if err != nil {
			return func(context.Context) error { return err }
		}
		return check
	}
	kill := func(kind string, err error) {
		w.log.Info("probe failed, killing container", "probe", kind, "container", c.spec.Name, "err", errString(err))
		grace := 30 * time.Second
		if t := w.latestPod().Spec.TerminationGracePeriodSeconds; t != nil {
			grace = time.Duration(*t) * time.Second
		}
		go w.stopProcess(proc, grace)
	}
	afterStart := func() {
		if p := c.spec.LivenessProbe; p != nil {
			go probeLoop(ctx, paramsOf(p), checker(p), func(ok bool, err error) bool {
				if !ok {
					kill("liveness", err)
					return false
				}
				return true
			})
		}
		if p := c.spec.ReadinessProbe; p != nil {
			go probeLoop(ctx, paramsOf(p), checker(p), func(ok bool, err error) bool {
				w.mu.Lock()
				changed := c.ready != ok && c.proc == proc
				if c.proc == proc {
					c.ready = ok
				}
				w.mu.Unlock()
				if changed {
					w.log.V(1).Info("readiness changed", "container", c.spec.Name, "ready", ok, "err", errString(err))
					w.changed()
				}
				return true
			})
		}
	}
	p := c.spec.StartupProbe
	if p == nil {
		afterStart()
		return
	}
	go probeLoop(ctx, paramsOf(p), checker(p), func(ok bool, err error) bool {
		if !ok {
			kill("startup", err)
			return false
		}
		w.mu.Lock()
		if c.proc == proc {
			c.started = true
			if c.spec.ReadinessProbe == nil {
				c.ready = true
			}
		}
		w.mu.Unlock()
		w.changed()
		afterStart()
		return false
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// execInContainer runs an exec probe's command with the container's env and mounts;
// success is exit code 0 within the probe's timeout (ctx).
func (w *podWorker) execInContainer(ctx context.Context, c *containerRuntime, cmd []string) error {
	if len(cmd) == 0 {
		return fmt.Errorf("exec probe without command")
	}
	spec, err := w.containerShimSpec(c, cmd, nil)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Join(w.dir, "shim"), "probe-*.out")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	specPath := f.Name() + ".json"
	defer os.Remove(specPath)
	p, err := startProcess(spec, specPath, f)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.signalGroup(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("exec probe timed out")
	}
	if p.exitCode != 0 {
		out, _ := os.ReadFile(f.Name())
		return fmt.Errorf("exec probe exited %d: %s", p.exitCode, string(out))
	}
	return nil
}

// maxTerminationMessage is the kubelet's limit of one container's termination message.
const maxTerminationMessage = 4096

func terminationLogPath(w *podWorker, c *containerRuntime) string {
	return filepath.Join(w.dir, "containers", c.spec.Name+".termination-log")
}

func terminationMessagePath(spec *v1.Container) string {
	if spec.TerminationMessagePath != "" {
		return spec.TerminationMessagePath
	}
	return v1.TerminationMessagePathDefault
}

// terminationMessage is what the container wrote to its termination message file, or
// under FallbackToLogsOnError after a failure with an empty file, the log's tail.
func terminationMessage(w *podWorker, c *containerRuntime, exitCode int) string {
	b, _ := os.ReadFile(terminationLogPath(w, c))
	if len(b) == 0 && exitCode != 0 && c.spec.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError {
		b, _ = os.ReadFile(c.logPath)
		if len(b) > 2048 {
			b = b[len(b)-2048:]
		}
	}
	if len(b) > maxTerminationMessage {
		b = b[:maxTerminationMessage]
	}
	return string(b)
}
