package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Faults injects failures into the bench's real parts: container processes (signals),
// nodes (power, network) and cluster DNS.
type Faults struct{ b *Bench }

// KillPod sends sig to the main process of every running container of a pod, as
// `kill -<sig>` on the node would; the kubelet then applies the restart policy.
func (f *Faults) KillPod(namespace, name string, sig syscall.Signal) error {
	pids, err := f.b.containerMainPIDs(namespace, name, "")
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	return nil
}

// StopPod SIGSTOPs every process of every container of a pod (a hung process: it holds
// its sockets but answers nothing); ContinuePod resumes them.
func (f *Faults) StopPod(namespace, name string) error {
	return f.b.signalPodProcesses(namespace, name, syscall.SIGSTOP)
}

func (f *Faults) ContinuePod(namespace, name string) error {
	return f.b.signalPodProcesses(namespace, name, syscall.SIGCONT)
}

// NodeDown is a power cut: the node's network goes, and its containerd, kubelet,
// kube-proxy, shims and containers are killed at once. Nothing of it is deleted: its
// pods stay bound to it until the control plane evicts them.
func (f *Faults) NodeDown(node string) error {
	n, err := f.b.node(node)
	if err != nil {
		return err
	}
	if err := setNodeLink(n.net, false); err != nil {
		return err
	}
	return f.b.powerOff(n)
}

// NodeUp boots a node NodeDown stopped, like a machine coming back: its runtime state
// (/run-like: containerd's state directory, the pods' network namespaces) is gone, its
// disks (containerd's content, the kubelet's root, pod volumes) are kept.
func (f *Faults) NodeUp(node string) error {
	n, err := f.b.node(node)
	if err != nil {
		return err
	}
	n.mu.Lock()
	down := n.down
	n.mu.Unlock()
	if !down {
		return fmt.Errorf("node %s is not down", node)
	}
	// The node's mounts went with its mount namespace at power-off; these guard the
	// bench's own table, where nothing of the node should be mounted, before the removal.
	if err := unmountUnder(n.paths.ContainerdState); err != nil {
		return err
	}
	if err := os.RemoveAll(n.paths.ContainerdState); err != nil {
		return err
	}
	if err := os.MkdirAll(n.paths.ContainerdState, 0o755); err != nil {
		return err
	}
	if err := unmountUnder(n.paths.KubeletRoot); err != nil {
		return err
	}
	if err := setNodeLink(n.net, true); err != nil {
		return err
	}
	return f.b.bootNode(n)
}

// PartitionNode cuts a node's network and leaves everything on it running; HealNode
// restores it.
func (f *Faults) PartitionNode(node string) error {
	n, err := f.b.node(node)
	if err != nil {
		return err
	}
	return setNodeLink(n.net, false)
}

func (f *Faults) HealNode(node string) error {
	n, err := f.b.node(node)
	if err != nil {
		return err
	}
	return setNodeLink(n.net, true)
}

// PodPID is the host pid of a container's main process.
func (f *Faults) PodPID(namespace, name, container string) (int, bool) {
	pids, err := f.b.containerMainPIDs(namespace, name, container)
	if err != nil || len(pids) != 1 {
		return 0, false
	}
	return pids[0], true
}

// podContainers returns the pod's node and the IDs of its running containers (all of
// them, or the one named container).
func (b *Bench) podContainers(namespace, name, container string) (*realNode, []string, error) {
	var pod corev1.Pod
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod); err != nil {
		return nil, nil, err
	}
	n, err := b.node(pod.Spec.NodeName)
	if err != nil {
		return nil, nil, fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	}
	var ids []string
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if container != "" && cs.Name != container {
			continue
		}
		if cs.State.Running == nil || cs.ContainerID == "" {
			continue
		}
		_, id, ok := strings.Cut(cs.ContainerID, "://")
		if !ok {
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("pod %s/%s has no running container %q", namespace, name, container)
	}
	return n, ids, nil
}

// containerCgroup finds the directory (relative to the bench tree) the kubelet and runc
// made for a container: <node>/kubepods/[<qos>/]pod<uid>/<container id>.
func (b *Bench) containerCgroup(n *realNode, id string) (string, error) {
	base := filepath.Join(cgroupV1Root, "memory", b.cgroups.Rel)
	var found string
	_ = filepath.WalkDir(filepath.Join(base, n.cgroupRel(), "kubepods"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if found == "" {
		return "", fmt.Errorf("no cgroup for container %s on %s", id, n.net.Name)
	}
	return filepath.Rel(base, found)
}

// containerCgroups are the cgroups (relative to the bench tree) of a pod's running
// containers: all of them, or the one named container.
func (b *Bench) containerCgroups(namespace, name, container string) ([]string, error) {
	n, ids, err := b.podContainers(namespace, name, container)
	if err != nil {
		return nil, err
	}
	var rels []string
	for _, id := range ids {
		rel, err := b.containerCgroup(n, id)
		if err != nil {
			return nil, err
		}
		rels = append(rels, rel)
	}
	return rels, nil
}

// containerMainPIDs returns, per running container, the process that is pid 1 in the
// container's pid namespace (its entrypoint).
func (b *Bench) containerMainPIDs(namespace, name, container string) ([]int, error) {
	rels, err := b.containerCgroups(namespace, name, container)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, rel := range rels {
		main := 0
		for _, pid := range b.cgroups.pids(rel) {
			if nsPIDIsOne(pid) {
				main = pid
				break
			}
		}
		if main == 0 {
			return nil, fmt.Errorf("container cgroup %s of %s/%s: no main process found", rel, namespace, name)
		}
		out = append(out, main)
	}
	return out, nil
}

// nsPIDIsOne reports whether pid is 1 in its innermost pid namespace.
func nsPIDIsOne(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			return len(f) > 1 && f[len(f)-1] == "1"
		}
	}
	return false
}

// signalPodProcesses sends sig to every process of every running container of a pod.
func (b *Bench) signalPodProcesses(namespace, name string, sig syscall.Signal) error {
	rels, err := b.containerCgroups(namespace, name, "")
	if err != nil {
		return err
	}
	for _, rel := range rels {
		for _, pid := range b.cgroups.pids(rel) {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
		}
	}
	return nil
}

// PodLogs is `kubectl logs` of a container (the kubelet serves it through the API server).
func (b *Bench) PodLogs(ctx context.Context, namespace, name, container string) (string, error) {
	cs, err := kubernetes.NewForConfig(b.RestConfig())
	if err != nil {
		return "", err
	}
	out, err := cs.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	return string(out), err
}

// Exec is `kubectl exec`: it runs cmd in a container through the API server and the
// node's kubelet and container runtime, and returns its output.
func (b *Bench) Exec(ctx context.Context, namespace, pod, container string, cmd ...string) (stdout, stderr string, err error) {
	cfg := b.RestConfig()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", "", err
	}
	var out, errb bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), err
}

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after grace) and starts it
// again with the same flags on the same port, as an upgrade or a crash of a control-plane
// node would; it returns once /readyz answers. Every client (the operator's informers,
// the kubelets, the tests) sees its connections drop and must re-list.
func (f *Faults) RestartAPIServer(ctx context.Context, grace time.Duration) error {
	return f.b.restartProcess(ctx, "kube-apiserver", grace, f.b.waitReadyz)
}

// restartProcess replaces the tracked control-plane process name with a new one started
// from the same binary and arguments, then waits for ready.
func (b *Bench) restartProcess(ctx context.Context, name string, grace time.Duration, ready func(context.Context) error) error {
	b.mu.Lock()
	idx := -1
	for i, p := range b.procs {
		if p.name == name {
			idx = i
		}
	}
	if idx < 0 {
		b.mu.Unlock()
		return fmt.Errorf("no %s process to restart", name)
	}
	old := b.procs[idx]
	b.mu.Unlock()

	old.stop(grace)
	p, err := startProcess(b.dir, name, old.cmd.Path, old.cmd.Args[1:]...)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if idx >= len(b.procs) || b.procs[idx] != old { // the bench stopped meanwhile
		b.mu.Unlock()
		p.stop(grace)
		return fmt.Errorf("bench stopped while restarting %s", name)
	}
	b.procs[idx] = p // keeps the stop order of Stop
	b.mu.Unlock()
	return ready(ctx)
}
