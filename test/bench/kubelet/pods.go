package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// containerRuntime is the kubelet's record of one container of a pod.
type containerRuntime struct {
	spec     v1.Container
	init     bool // an init container (run to completion before the others)
	sidecar  bool // an init container with restartPolicy Always
	logPath  string
	proc     *process
	runs     int // how many times a process was started
	restarts int32
	state    v1.ContainerState
	last     v1.ContainerState
	ready    bool
	started  bool
	done     bool // will not run again
	exitCode int32
	newImage string // set by a pod update that changed the image; applied at the next start
}

// podWorker runs one pod (one UID) from admission to deletion.
type podWorker struct {
	k    *Kubelet
	node *nodeState
	uid  types.UID
	ns   string
	name string
	log  logr.Logger
	dir  string

	ctx    context.Context // cancelled when the kubelet stops or the Pod object is gone
	cancel context.CancelFunc

	deleting     chan struct{} // closed when deletionTimestamp is seen
	deletingOnce sync.Once
	kick         chan struct{} // status changed

	mu         sync.Mutex
	pod        *v1.Pod
	podIP      string
	startTime  metav1.Time
	sandboxOK  bool
	initDone   bool
	failed     bool // an init container failed under restartPolicy Never
	finalPhase v1.PodPhase
	inits      []*containerRuntime
	mains      []*containerRuntime
	volDirs    map[string]string
}

func newPodWorker(k *Kubelet, node *nodeState, pod *v1.Pod) *podWorker {
	w := &podWorker{
		k: k, node: node, uid: pod.UID, ns: pod.Namespace, name: pod.Name,
		log:       k.log.WithValues("pod", pod.Namespace+"/"+pod.Name, "node", node.spec.Name),
		dir:       filepath.Join(k.cfg.RootDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		deleting:  make(chan struct{}),
		kick:      make(chan struct{}, 1),
		pod:       pod,
		startTime: metav1.Now(),
	}
	w.ctx, w.cancel = context.WithCancel(k.ctx)
	for _, c := range pod.Spec.InitContainers {
		cr := &containerRuntime{spec: c, init: true, logPath: filepath.Join(w.dir, "logs", c.Name+".log")}
		cr.sidecar = c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		cr.state.Waiting = &v1.ContainerStateWaiting{Reason: "PodInitializing"}
		w.inits = append(w.inits, cr)
	}
	for _, c := range pod.Spec.Containers {
		cr := &containerRuntime{spec: c, logPath: filepath.Join(w.dir, "logs", c.Name+".log")}
		cr.state.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
		if len(pod.Spec.InitContainers) > 0 {
			cr.state.Waiting.Reason = "PodInitializing"
		}
		w.mains = append(w.mains, cr)
	}
	if pod.DeletionTimestamp != nil {
		w.markDeleting()
	}
	return w
}

// update records a newer version of the Pod object. A changed container image is the
// one in-place pod change a kubelet acts on (the operator upgrades etcd members this way):
// the container is stopped gracefully and started again on the new image, with the same
// pod, IP and volumes.
func (w *podWorker) update(pod *v1.Pod) {
	var restart []*process
	w.mu.Lock()
	w.pod = pod
	for _, c := range w.mains {
		for _, sc := range pod.Spec.Containers {
			if sc.Name == c.spec.Name && sc.Image != c.spec.Image && sc.Image != c.newImage {
				c.newImage = sc.Image
				if c.proc != nil && !c.proc.exited() {
					restart = append(restart, c.proc)
				}
			}
		}
	}
	w.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		w.markDeleting()
	}
	for _, p := range restart {
		go w.stopProcess(p, w.gracePeriod())
	}
}

func (w *podWorker) markDeleting() { w.deletingOnce.Do(func() { close(w.deleting) }) }

// objectGone handles the Pod disappearing from the API (force deletion): its processes
// are killed at once.
func (w *podWorker) objectGone() {
	w.markDeleting()
	w.cancel()
}

func (w *podWorker) isDeleting() bool {
	select {
	case <-w.deleting:
		return true
	default:
		return false
	}
}

func (w *podWorker) latestPod() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// changed signals the status loop.
func (w *podWorker) changed() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run is the pod's life: sandbox (IP, volumes), init containers, containers, and
// graceful termination when the pod is deleted.
func (w *podWorker) run() {
	defer w.cancel()
	w.log.Info("pod admitted")
	statusDone := make(chan struct{})
	go func() { defer close(statusDone); w.statusLoop() }()
	w.changed()

	var mainWG sync.WaitGroup
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if !w.setupSandbox() {
			return
		}
		if !w.runInits(&mainWG) {
			return
		}
		for _, c := range w.mains {
			mainWG.Add(1)
			go func() { defer mainWG.Done(); w.containerLoop(c) }()
		}
		mainWG.Wait()
	}()

	select {
	case <-w.ctx.Done():
	case <-w.deleting:
	case <-finished:
		w.mu.Lock()
		w.finalPhase = w.terminalPhase()
		w.mu.Unlock()
		w.changed()
		w.log.Info("pod finished", "phase", w.finalPhase)
		select {
		case <-w.ctx.Done():
		case <-w.deleting:
		}
	}
	// Each container goroutine stops its own process (gracefully on deletion, at once
	// when the kubelet stops or the object vanished); wait for all of them.
	<-finished
	mainWG.Wait()
	graceful := w.ctx.Err() == nil
	if graceful {
		w.finalizeDeletion()
	}
	w.cancel()
	<-statusDone
	w.cleanup()
}

// gracePeriod is how long a deleted pod's containers get between SIGTERM and SIGKILL.
func (w *podWorker) gracePeriod() time.Duration {
	pod := w.latestPod()
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// finalizeDeletion posts the terminal status and removes the Pod object with grace 0,
// as the kubelet does once a deleted pod's containers are gone. A down node cannot do
// this until it comes back.
func (w *podWorker) finalizeDeletion() {
	if !w.waitNodeUp() {
		return
	}
	w.mu.Lock()
	if w.finalPhase == "" {
		w.finalPhase = w.terminalPhase()
	}
	w.mu.Unlock()
	if err := w.pushStatus(w.ctx); err != nil {
		w.log.Info("final status update failed", "err", err.Error())
	}
	uid := w.uid
	for {
		err := w.k.cs.CoreV1().Pods(w.ns).Delete(w.ctx, w.name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64),
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		if err == nil || isGoneErr(err) || w.ctx.Err() != nil {
			w.log.Info("pod deleted")
			return
		}
		w.log.Info("pod delete failed, retrying", "err", err.Error())
		if !sleepCtx(w.ctx, time.Second) {
			return
		}
	}
}

// cleanup releases the IP and removes the pod's volumes and scratch space; logs stay
// for post-mortems. PVC data lives elsewhere and survives.
func (w *podWorker) cleanup() {
	w.mu.Lock()
	ip := w.podIP
	w.mu.Unlock()
	if ip != "" && ip != w.node.spec.IP {
		w.k.ips.release(ip)
	}
	for _, sub := range []string{"volumes", "tmp", "containers", "shim"} {
		_ = os.RemoveAll(filepath.Join(w.dir, sub))
	}
}

// waitNodeUp blocks while the node is down; false if the worker must stop.
func (w *podWorker) waitNodeUp() bool {
	select {
	case <-w.node.upChan():
		return w.ctx.Err() == nil
	case <-w.ctx.Done():
		return false
	}
}

// setupSandbox allocates the pod IP and prepares volumes, retrying (like a kubelet stuck
// in ContainerCreating) until it works or the pod is deleted.
func (w *podWorker) setupSandbox() bool {
	pod := w.latestPod()
	ip := w.node.spec.IP
	if !pod.Spec.HostNetwork {
		var err error
		ip, err = w.k.ips.allocate(string(pod.UID))
		if err != nil {
			w.log.Error(err, "no pod IP")
			return false
		}
	}
	w.mu.Lock()
	w.podIP = ip
	w.mu.Unlock()
	for _, d := range []string{"logs", "volumes", "tmp", "containers", "shim"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			w.log.Error(err, "pod dir")
			return false
		}
	}
	_ = os.Chmod(filepath.Join(w.dir, "tmp"), 0o1777)
	delay := 500 * time.Millisecond
	for {
		if !w.waitNodeUp() || w.isDeleting() {
			return false
		}
		dirs, err := w.podContext().prepareVolumes(w.ctx, filepath.Join(w.dir, "volumes"))
		if err == nil {
			w.mu.Lock()
			w.volDirs = dirs
			w.sandboxOK = true
			w.mu.Unlock()
			w.changed()
			return true
		}
		w.log.Info("volumes not ready", "err", err.Error())
		w.setWaitingAll("ContainerCreating", err.Error())
		select {
		case <-w.ctx.Done():
			return false
		case <-w.deleting:
			return false
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (w *podWorker) setWaitingAll(reason, msg string) {
	w.mu.Lock()
	for _, c := range append(append([]*containerRuntime{}, w.inits...), w.mains...) {
		if c.state.Waiting != nil {
			c.state.Waiting = &v1.ContainerStateWaiting{Reason: reason, Message: msg}
		}
	}
	w.mu.Unlock()
	w.changed()
}

func (w *podWorker) podContext() *podContext {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &podContext{pod: w.pod, podIP: w.podIP, hostIP: w.node.spec.IP, node: &w.node.spec, clientset: w.k.cs}
}

// runInits runs init containers in order; sidecars (restartPolicy Always) keep running
// alongside, tracked by wg. False when the pod cannot proceed.
func (w *podWorker) runInits(wg *sync.WaitGroup) bool {
	policy := w.latestPod().Spec.RestartPolicy
	for _, c := range w.inits {
		if c.sidecar {
			wg.Add(1)
			go func() { defer wg.Done(); w.containerLoop(c) }()
			if !w.waitStarted(c) {
				return false
			}
			continue
		}
		consecutive := 0
		for {
			code, ran, startErr := w.runOnce(c)
			if w.ctx.Err() != nil || w.isDeleting() {
				return false
			}
			if startErr == nil && code == 0 {
				w.mu.Lock()
				c.ready, c.done = true, true
				w.mu.Unlock()
				break
			}
			if startErr == nil && policy == v1.RestartPolicyNever {
				w.mu.Lock()
				c.done, w.failed = true, true
				w.mu.Unlock()
				w.changed()
				return false
			}
			consecutive = w.k.backoff.next(consecutive, ran)
			if !w.backoffWait(c, w.k.backoff.delay(consecutive), startErr) {
				return false
			}
		}
	}
	w.mu.Lock()
	w.initDone = true
	for _, c := range w.mains {
		if c.state.Waiting != nil {
			c.state.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
	}
	w.mu.Unlock()
	w.changed()
	return true
}

func (w *podWorker) waitStarted(c *containerRuntime) bool {
	for {
		w.mu.Lock()
		ok := c.started
		w.mu.Unlock()
		if ok {
			return true
		}
		if !sleepCtx(w.ctx, 100*time.Millisecond) || w.isDeleting() {
			return false
		}
	}
}

// containerLoop runs a regular (or sidecar) container under the restart policy.
func (w *podWorker) containerLoop(c *containerRuntime) {
	policy := w.latestPod().Spec.RestartPolicy
	if c.sidecar {
		policy = v1.RestartPolicyAlways
	}
	consecutive := 0
	for {
		code, ran, startErr := w.runOnce(c)
		if w.ctx.Err() != nil || w.isDeleting() {
			w.mu.Lock()
			c.done = true
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		imageChanged := c.newImage != ""
		if imageChanged {
			c.spec.Image, c.newImage = c.newImage, ""
		}
		w.mu.Unlock()
		if imageChanged {
			// Restarted for a new image, not crashed: no back-off, whatever the policy.
			consecutive = 0
			continue
		}
		restart := startErr != nil || policy == v1.RestartPolicyAlways || (policy == v1.RestartPolicyOnFailure && code != 0)
		if !restart {
			w.mu.Lock()
			c.done = true
			w.mu.Unlock()
			w.changed()
			return
		}
		consecutive = w.k.backoff.next(consecutive, ran)
		if !w.backoffWait(c, w.k.backoff.delay(consecutive), startErr) {
			w.mu.Lock()
			c.done = true
			w.mu.Unlock()
			return
		}
	}
}

// backoffWait shows the container as waiting (CrashLoopBackOff, or the start error) for d.
func (w *podWorker) backoffWait(c *containerRuntime, d time.Duration, startErr error) bool {
	w.mu.Lock()
	if startErr != nil {
		c.state = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CreateContainerError", Message: startErr.Error()}}
	} else {
		c.last = c.state
		c.state = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", d, c.spec.Name, w.name, w.ns, w.uid),
		}}
	}
	w.mu.Unlock()
	w.changed()
	select {
	case <-w.ctx.Done():
		return false
	case <-w.deleting:
		return false
	case <-time.After(d):
		return true
	}
}

// terminalPhase computes the phase of a pod whose containers will not run again.
func (w *podWorker) terminalPhase() v1.PodPhase {
	if w.failed {
		return v1.PodFailed
	}
	for _, c := range w.mains {
		if c.state.Terminated == nil || c.state.Terminated.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}
