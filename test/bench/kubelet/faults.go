package kubelet

import (
	"fmt"
	"syscall"
	"time"
)

// KillPod sends sig to the main process of each running regular container of the pod
// (like a runtime signalling each container's PID 1). A process killed this way shows
// as terminated with exit code 128+sig, then the restart policy applies.
func (k *Kubelet) KillPod(namespace, name string, sig syscall.Signal) error {
	return k.signalPod(namespace, name, func(p *process) error { return p.signal(sig) })
}

// StopPod freezes every process of the pod's containers (SIGSTOP to each process
// group), like pausing its containers: the processes stay, but stop answering.
func (k *Kubelet) StopPod(namespace, name string) error {
	return k.signalPod(namespace, name, func(p *process) error { p.signalGroup(syscall.SIGSTOP); return nil })
}

// ContinuePod resumes a pod frozen by StopPod.
func (k *Kubelet) ContinuePod(namespace, name string) error {
	return k.signalPod(namespace, name, func(p *process) error { p.signalGroup(syscall.SIGCONT); return nil })
}

func (k *Kubelet) signalPod(namespace, name string, do func(*process) error) error {
	w := k.worker(namespace, name)
	if w == nil {
		return fmt.Errorf("pod %s/%s is not running on the bench kubelet", namespace, name)
	}
	w.mu.Lock()
	var procs []*process
	for _, c := range w.mains {
		if c.proc != nil && !c.proc.exited() {
			procs = append(procs, c.proc)
		}
	}
	w.mu.Unlock()
	if len(procs) == 0 {
		return fmt.Errorf("pod %s/%s has no running container process", namespace, name)
	}
	for _, p := range procs {
		if err := do(p); err != nil {
			return err
		}
	}
	return nil
}

// NodeDown makes the node a dead machine: no more Lease renewals or status updates from
// it or its pods, and every process of its pods is killed. The Pod objects are left as
// they are; the node lifecycle controller notices the missing heartbeats. Nothing on the
// node runs until NodeUp.
func (k *Kubelet) NodeDown(node string) error {
	n, ok := k.nodes[node]
	if !ok {
		return fmt.Errorf("unknown node %q", node)
	}
	if !n.setDown(true) {
		return nil
	}
	k.log.Info("node down", "node", node)
	for _, w := range k.workersOn(node) {
		w.mu.Lock()
		for _, c := range append(append([]*containerRuntime{}, w.inits...), w.mains...) {
			if c.proc != nil {
				c.proc.signalGroup(syscall.SIGKILL)
			}
		}
		w.mu.Unlock()
	}
	return nil
}

// NodeUp brings a node back like a rebooted machine: heartbeats resume, containers of
// its pods start again (counted as restarts), pending status updates and deletions are
// posted.
func (k *Kubelet) NodeUp(node string) error {
	n, ok := k.nodes[node]
	if !ok {
		return fmt.Errorf("unknown node %q", node)
	}
	if n.setDown(false) {
		k.log.Info("node up", "node", node)
	}
	return nil
}

func (k *Kubelet) workersOn(node string) []*podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*podWorker
	for _, w := range k.workers {
		if w.node.spec.Name == node {
			out = append(out, w)
		}
	}
	return out
}

// DelayDNS withholds the hosts-file records of exactly this hostname (e.g. a pod's
// FQDN) for d after they would first appear. "*.<suffix>" delays every record under
// that suffix that has not been published yet (e.g. the members a scale-up will add).
func (k *Kubelet) DelayDNS(hostname string, d time.Duration) {
	k.dns.delay(hostname, d)
}

// PodLogPath is the file receiving stdout and stderr of the container (all its restarts
// appended) of the newest pod with that name, also after the pod was deleted.
func (k *Kubelet) PodLogPath(namespace, name, container string) string {
	w := k.worker(namespace, name)
	if w == nil {
		return ""
	}
	for _, c := range append(append([]*containerRuntime{}, w.inits...), w.mains...) {
		if c.spec.Name == container {
			return c.logPath
		}
	}
	return ""
}

// PodPID is the host PID of the container's current process, if it is running.
func (k *Kubelet) PodPID(namespace, name, container string) (int, bool) {
	w := k.worker(namespace, name)
	if w == nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range append(append([]*containerRuntime{}, w.inits...), w.mains...) {
		if c.spec.Name == container && c.proc != nil && !c.proc.exited() {
			return c.proc.pid, true
		}
	}
	return 0, false
}

// PodIP is the IP the kubelet gave the newest pod with that name.
func (k *Kubelet) PodIP(namespace, name string) (string, bool) {
	w := k.worker(namespace, name)
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.podIP, w.podIP != ""
}
