package bench

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Real nodes: per node, containerd + runc, the kubelet and kube-proxy, each in the node's
// own network namespace, with the node's private containerd state, kubelet root and pod
// CIDR, and its processes and containers in the node's cgroup subtree under the bench's
// own (REAL-NODE.md has the recipe these follow). Each node has its own mount namespace
// (a child of the bench's private one) shared by its containerd, kubelet and kube-proxy, so
// the kubelet's volume mounts are what containerd sees, and what one node mounts (its
// containers' root file systems, volumes, pod network namespace pins) is in its own mount
// table only, as on a real machine.

// nodeBinDir is where hack/tools.sh puts the kubelet and kube-proxy.
func nodeBinDir() string { return filepath.Join(CacheDir(), "k8s-node-"+K8sVersion) }

// realNode is one running node.
type realNode struct {
	net   nodeNet
	paths nodePaths
	zone  string

	mu                          sync.Mutex
	containerd, kubelet, kproxy *process
	mounts                      *process // holds the node's mount namespace (bootNode)
	down                        bool
}

// cgroupRel is the node's subtree below the bench's tree; the kubelet's cgroupRoot.
func (n *realNode) cgroupRel() string { return strings.TrimPrefix(n.net.Name, "bench-") }

// nodeDaemonsCgroup holds a node's containerd (and so its shims), kubelet and kube-proxy,
// beside the kubelet's kubepods, so that killing the subtree is a node's power cut.
const nodeDaemonsCgroup = "daemons"

// nodeAgents are the cgroups below nodeDaemonsCgroup, one per agent, so that each one's
// CPU can be read apart (NodesCPU); the node's mount namespace holder is in
// nodeDaemonsCgroup itself.
var nodeAgents = []string{"containerd", "kubelet", "kube-proxy"}

// processNetwork sets up, once per process, the bench namespace's bridge and the route
// that lets locally generated packets reach ClusterIPs (kube-proxy's OUTPUT DNAT needs a
// route first). They outlive a bench, like the registry on the bridge, and go with the
// namespace when the process exits.
var processNetwork = sync.OnceValue(func() error {
	if err := setupBridge(); err != nil {
		return err
	}
	if err := ip("route", "add", serviceCIDR, "dev", bridgeName); err != nil {
		return err
	}
	if !ipv6Available() {
		return nil
	}
	return ip("-6", "route", "add", serviceCIDR6, "dev", bridgeName)
})

// setupNetwork creates the bench's cgroup tree, its bridge and every node's network
// namespace and files; the control plane and the registry come up on the bridge next.
func (b *Bench) setupNetwork() error {
	if err := sweepStaleTrees(); err != nil {
		b.opts.Log("bench: removing what killed benches left: %v", err)
	}
	tree, err := newCgroupTree(fmt.Sprintf("bench-%d-%d", os.Getpid(), benchSeq.Load()))
	if err != nil {
		return err
	}
	b.cgroups = tree
	if err := processNetwork(); err != nil {
		return err
	}
	nets := make([]nodeNet, b.opts.Nodes)
	if b.opts.IPv6 && !ipv6Available() {
		return errors.New("an IPv6 bench needs a kernel with IPv6 (/proc/sys/net/ipv6)")
	}
	for i := range nets {
		nets[i] = nodeNetFor(i)
		if b.opts.IPv6 {
			nets[i] = nets[i].withIPv6(i)
		}
	}
	for i, nn := range nets {
		if err := addNodeNetwork(nn, nets); err != nil {
			return fmt.Errorf("node %s network: %w", nn.Name, err)
		}
		b.nodes = append(b.nodes, &realNode{net: nn, paths: pathsFor(b.dir, nn), zone: Zone(i)})
	}
	return tree.ensure("control")
}

// bootNodes starts every node. The control plane must be up.
func (b *Bench) bootNodes() error {
	b.nodeKubeconfig = filepath.Join(b.dir, "node.kubeconfig")
	if err := WriteKubeconfig(b.nodeKubeconfig, fmt.Sprintf("https://%s:%d", controlPlaneIP, b.apiPort),
		b.pki.caPEM, b.pki.adminCertPEM, b.pki.adminKeyPEM); err != nil {
		return err
	}
	for _, n := range b.nodes {
		if err := b.writeNodeFiles(n); err != nil {
			return fmt.Errorf("node %s: %w", n.net.Name, err)
		}
		if err := b.bootNode(n); err != nil {
			return fmt.Errorf("node %s: %w", n.net.Name, err)
		}
	}
	return nil
}

// startControlPlaneProxy runs a kube-proxy in the bench namespace itself, so the test
// process and an in-process operator reach ClusterIPs (cluster DNS first of all) as a pod
// would. kube-proxy wants a Node to read its addresses from and waits 30 s for one to
// exist: it borrows the first node's, which only matters for NodePorts.
func (b *Bench) startControlPlaneProxy() error {
	cpProxy := filepath.Join(b.dir, "kube-proxy-control-plane.yaml")
	if err := os.WriteFile(cpProxy, []byte(kubeProxyConfig(b.nodes[0].net.Name, controlPlaneIP, b.nodeKubeconfig, b.clusterCIDRs())), 0o644); err != nil {
		return err
	}
	p, err := b.startInNode("", "", "control", "kube-proxy-control-plane", filepath.Join(nodeBinDir(), "kube-proxy"),
		"--config="+cpProxy, "--v=1")
	if err != nil {
		return err
	}
	b.track(p)
	return nil
}

// writeNodeFiles writes a node's configuration files and creates its directories.
func (b *Bench) writeNodeFiles(n *realNode) error {
	p := n.paths
	for _, d := range []string{p.ContainerdRoot, p.ContainerdState, p.CNIConfDir, p.CNIDataDir, p.KubeletRoot, p.PodLogs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	registry := fmt.Sprintf("%s:%d", controlPlaneIP, registryPort)
	files := map[string]string{
		p.ContainerdConfig: containerdConfig(p, registry, sandboxImage),
		filepath.Join(p.CNIConfDir, "10-bench.conflist"): cniConfig(n.net, p),
		p.KubeletConfig:   kubeletConfig(n.net, p, filepath.Join(b.cgroups.Rel, n.cgroupRel())),
		p.ResolvConf:      nodeResolvConf(),
		p.KubeProxyConfig: kubeProxyConfig(n.net.Name, n.net.IP, b.nodeKubeconfig, b.clusterCIDRs()),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	agents := filepath.Join(n.cgroupRel(), nodeDaemonsCgroup)
	for _, a := range nodeAgents {
		if err := b.cgroups.ensure(filepath.Join(agents, a)); err != nil {
			return err
		}
	}
	if b.opts.NodeAgentsFirst {
		return b.cgroups.setCPUShares(agents, nodeAgentsCPUShares)
	}
	return nil
}

// nodeAgentsCPUShares is the agents' cpu.shares with Options.NodeAgentsFirst: 8 times
// what the kubelet gives a 2-CPU node's pods (its kubepods cgroup), so that the agents
// get ~90% of the node's CPU whenever they want it and the pods the rest.
const nodeAgentsCPUShares = 16384

// bootNode starts a node's containerd, kubelet and kube-proxy (again, after NodeDown).
func (b *Bench) bootNode(n *realNode) error {
	cg := filepath.Join(n.cgroupRel(), nodeDaemonsCgroup)
	short := strings.TrimPrefix(n.net.Name, "bench-")
	// The node's mount namespace lives as long as this process, which does nothing else:
	// it is in the node's cgroup, so a power-off kills it with the rest and the
	// namespace, with everything mounted in it, goes as a machine's mounts do. (Pinning
	// the namespace with a bind mount of its file, `unshare --mount=FILE`, failed in CI
	// with EINVAL, the kernel's loop check, on 4 of 4 benches.)
	mounts, err := b.startInNode("", "", cg, short+"-mounts", "unshare", "--mount", "--propagation", "private", "sleep", "infinity")
	if err != nil {
		return err
	}
	mnt, err := waitOwnMountNamespace(mounts, 10*time.Second)
	if err != nil {
		mounts.stop(time.Second)
		return err
	}
	cd, err := b.startInNode(n.net.Name, mnt, filepath.Join(cg, "containerd"), short+"-containerd", "/usr/bin/containerd", "--config", n.paths.ContainerdConfig)
	if err != nil {
		mounts.stop(time.Second)
		return err
	}
	if err := waitSocket(n.paths.ContainerdSock, 30*time.Second, cd); err != nil {
		cd.stop(time.Second)
		return err
	}
	if err := waitCRI(n.paths.ContainerdSock, 30*time.Second, cd); err != nil {
		cd.stop(time.Second)
		return err
	}
	// The kubelets of a bench share /var/lib (privateNodeDirs) and with it the device
	// manager's fixed socket, /var/lib/kubelet/device-plugins/kubelet.sock: each kubelet
	// empties that directory and then listens there, so two starting together can
	// interleave (one's bind between the other's emptying and bind) and one exits with
	// "address already in use" (CI, with the nodes booting in parallel). One kubelet at
	// a time gets as far as its socket.
	b.kubeletStart.Lock()
	defer b.kubeletStart.Unlock()
	before := socketInode(devicePluginSocket)
	kl, err := b.startInNode(n.net.Name, mnt, filepath.Join(cg, "kubelet"), short+"-kubelet", filepath.Join(nodeBinDir(), "kubelet"),
		"--config="+n.paths.KubeletConfig,
		"--kubeconfig="+b.nodeKubeconfig,
		"--root-dir="+n.paths.KubeletRoot,
		// Its own serving certificate: the default cert dir, /var/lib/kubelet/pki, is
		// one tmpfs shared by the bench's nodes (privateNodeDirs), and kubelets starting
		// together each wrote a self-signed pair there, one's key beside another's
		// certificate ("private key does not match public key": the node never started).
		"--cert-dir="+filepath.Join(n.paths.KubeletRoot, "pki"),
		"--hostname-override="+n.net.Name,
		"--node-ip="+n.net.nodeIPs(),
		"--node-labels="+"topology.kubernetes.io/zone="+n.zone,
		"--v=1",
	)
	if err != nil {
		cd.stop(time.Second)
		return err
	}
	if err := waitNewSocket(devicePluginSocket, before, 10*time.Second, kl); err != nil {
		kl.stop(time.Second)
		cd.stop(time.Second)
		return err
	}
	kp, err := b.startInNode(n.net.Name, mnt, filepath.Join(cg, "kube-proxy"), short+"-kube-proxy", filepath.Join(nodeBinDir(), "kube-proxy"),
		"--config="+n.paths.KubeProxyConfig, "--v=1")
	if err != nil {
		kl.stop(time.Second)
		cd.stop(time.Second)
		return err
	}
	n.mu.Lock()
	n.containerd, n.kubelet, n.kproxy, n.mounts, n.down = cd, kl, kp, mounts, false
	n.mu.Unlock()
	return nil
}

// startInNode runs bin in network namespace ns and the mount namespace at mnt (a
// /proc/PID/ns/mnt; "" for the bench's own) as a member of cgroup rel (below the bench's tree) in every
// hierarchy. A shell joins the cgroup and execs nsenter, which execs bin: the recorded pid
// is bin's, and everything bin starts (containerd's shims and containers) stays inside the
// tree.
func (b *Bench) startInNode(ns, mnt, rel, name, bin string, args ...string) (*process, error) {
	var script strings.Builder
	for _, f := range b.cgroups.procsFiles(rel) {
		fmt.Fprintf(&script, "echo $$ > %s || exit 1; ", shellQuote(f))
	}
	script.WriteString("exec ")
	if ns != "" || mnt != "" {
		script.WriteString("nsenter")
		if mnt != "" {
			script.WriteString(" --mount=" + shellQuote(mnt))
		}
		if ns != "" {
			script.WriteString(" --net=" + shellQuote(netnsPath(ns)))
		}
		script.WriteString(" -- ")
	}
	script.WriteString(shellQuote(bin))
	for _, a := range args {
		script.WriteString(" " + shellQuote(a))
	}
	return startProcess(b.dir, name, "/bin/sh", "-c", script.String())
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitSocket waits for a unix socket to appear, failing early if p exits.
func waitSocket(path string, budget time.Duration, p *process) error {
	deadline := time.Now().Add(budget)
	for {
		if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeSocket != 0 {
			return nil
		}
		if gone, err := p.exited(); gone {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, budget)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// devicePluginSocket is where every kubelet's device manager listens (a path fixed in
// the kubelet, not below --root-dir).
const devicePluginSocket = "/var/lib/kubelet/device-plugins/kubelet.sock"

// socketInode is the inode of the socket at path, 0 if there is none.
func socketInode(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0
	}
	return st.Ino
}

// waitNewSocket waits until a socket other than inode before is at path (the kubelet
// removes the old one and listens anew), or until p exits (its error), or budget ends:
// then it returns nil, since the wait only keeps kubelet starts apart and a kubelet
// slower than that is not broken.
func waitNewSocket(path string, before uint64, budget time.Duration, p *process) error {
	deadline := time.Now().Add(budget)
	for {
		if ino := socketInode(path); ino != 0 && ino != before {
			return nil
		}
		if gone, err := p.exited(); gone {
			return err
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// powerOff stops a node like a power cut: every process of the node (daemons, shims,
// containers) is SIGKILLed at once. Its network is left to the caller.
func (b *Bench) powerOff(n *realNode) error {
	n.mu.Lock()
	n.down = true
	procs := []*process{n.kproxy, n.kubelet, n.containerd, n.mounts}
	n.mu.Unlock()
	err := b.cgroups.killAll(n.cgroupRel(), 15*time.Second)
	for _, p := range procs {
		if p != nil {
			p.stop(time.Second) // reaps; the process is already dead
		}
	}
	return err
}

// stopNodes powers every node off, releases their mounts and namespaces and removes the
// bench's cgroup tree. The control plane is still up (Stop stops it afterwards).
func (b *Bench) stopNodes() error {
	var errs []error
	for _, n := range b.nodes {
		if err := b.powerOff(n); err != nil {
			errs = append(errs, err)
		}
	}
	if b.cgroups != nil {
		// The bench namespace's own kube-proxy is in "control"; kill it with the rest.
		if err := b.cgroups.killAll("", 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountUnder(b.dir); err != nil {
		errs = append(errs, err)
	}
	if err := removeNetnsPins(); err != nil {
		errs = append(errs, err)
	}
	for _, n := range b.nodes {
		if err := removeNodeNetwork(n.net); err != nil {
			errs = append(errs, err)
		}
	}
	if b.cgroups != nil {
		if err := b.cgroups.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// node finds a node by name.
func (b *Bench) node(name string) (*realNode, error) {
	for _, n := range b.nodes {
		if n.net.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q on this bench", name)
}

// nodeDaemonsExited fails if a node daemon died while the node is meant to be up.
func (b *Bench) nodeDaemonsExited() error {
	for _, n := range b.nodes {
		n.mu.Lock()
		down, procs := n.down, []*process{n.containerd, n.kubelet, n.kproxy, n.mounts}
		n.mu.Unlock()
		if down {
			continue
		}
		for _, p := range procs {
			if p == nil {
				continue
			}
			if gone, err := p.exited(); gone {
				return fmt.Errorf("node %s: %w", n.net.Name, err)
			}
		}
	}
	return nil
}

// clusterCIDRs are the pod networks kube-proxy treats as local traffic.
func (b *Bench) clusterCIDRs() string {
	if b.opts.IPv6 {
		return clusterCIDR6 + "," + clusterCIDR
	}
	return clusterCIDR
}

// serviceCIDRs is the API server's --service-cluster-ip-range: IPv6 first on an
// IPv6-primary bench, so a Service without ipFamilies (the operator's) is IPv6.
func (b *Bench) serviceCIDRs() string {
	if b.opts.IPv6 {
		return serviceCIDR6 + "," + serviceCIDR
	}
	return serviceCIDR
}

// kubernetesServiceIP is the ClusterIP of the kubernetes Service.
func (b *Bench) kubernetesServiceIP() string {
	if b.opts.IPv6 {
		return serviceCIDR6FirstIP
	}
	return serviceCIDRFirstIP
}

// advertiseIP is the API server's address in the kubernetes Service's endpoints, of the
// Service's family.
func (b *Bench) advertiseIP() string {
	if b.opts.IPv6 {
		return controlPlaneIP6
	}
	return controlPlaneIP
}

// NodeMounts lists the mount points below a node's directory as the calling process
// sees them and as the node's own daemons do (its containerd's mount table).
func (b *Bench) NodeMounts(node string) (here, inNode []string, err error) {
	n, err := b.node(node)
	if err != nil {
		return nil, nil, err
	}
	n.mu.Lock()
	cd := n.containerd
	n.mu.Unlock()
	if cd == nil {
		return nil, nil, fmt.Errorf("node %s has no containerd running", node)
	}
	if here, err = mountPoints(n.paths.Dir); err != nil {
		return nil, nil, err
	}
	inNode, err = nodeMountPoints(cd.cmd.Process.Pid, n.paths.Dir)
	return here, inNode, err
}

// waitOwnMountNamespace waits until p (unshare, exec'ing a process that only waits) is
// in a mount namespace other than the caller's and returns its /proc path, for nsenter.
func waitOwnMountNamespace(p *process, budget time.Duration) (string, error) {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return "", err
	}
	path := fmt.Sprintf("/proc/%d/ns/mnt", p.cmd.Process.Pid)
	deadline := time.Now().Add(budget)
	for {
		if ns, err := os.Readlink(path); err == nil && ns != self {
			return path, nil
		}
		if gone, err := p.exited(); gone {
			return "", fmt.Errorf("%s exited before it had its own mount namespace: %v", p.name, err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s had no mount namespace of its own within %v", p.name, budget)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NodesCPU is the CPU time every node of a bench has used so far, split as a real
// node's accounting splits it: the pods (the kubelet's kubepods cgroup: containers,
// their sandboxes, the probes' targets) and the node's agents (containerd with its
// shims and every runc it runs, the kubelet, kube-proxy). Two readings give the CPU
// the nodes used between them; the bench's control plane and this process are in
// neither.
type NodesCPU struct {
	Pods, Agents time.Duration
	// Agent is Agents by agent: "containerd" (with its shims and every runc it runs),
	// "kubelet", "kube-proxy".
	Agent map[string]time.Duration
}

// NodesCPU reads every node's cgroup counters. A node whose kubelet has not yet made
// its kubepods cgroup is an error, not a zero.
func (b *Bench) NodesCPU() (NodesCPU, error) {
	sum := NodesCPU{Agent: map[string]time.Duration{}}
	for _, n := range b.nodes {
		pods, err := b.cgroups.cpuUsage(filepath.Join(n.cgroupRel(), "kubepods"))
		if err != nil {
			return NodesCPU{}, fmt.Errorf("node %s: pods' CPU: %w", n.net.Name, err)
		}
		agents, err := b.cgroups.cpuUsage(filepath.Join(n.cgroupRel(), nodeDaemonsCgroup))
		if err != nil {
			return NodesCPU{}, fmt.Errorf("node %s: agents' CPU: %w", n.net.Name, err)
		}
		sum.Pods += pods
		sum.Agents += agents
		for _, a := range nodeAgents {
			d, err := b.cgroups.cpuUsage(filepath.Join(n.cgroupRel(), nodeDaemonsCgroup, a))
			if err != nil {
				return NodesCPU{}, fmt.Errorf("node %s: %s's CPU: %w", n.net.Name, a, err)
			}
			sum.Agent[a] += d
		}
	}
	return sum, nil
}
