// Package bench runs a local Kubernetes cluster of real parts inside the private mount+net
// namespaces EnterNamespace sets up: a control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler), real nodes (containerd + runc, kubelet,
// kube-proxy and a CNI bridge, each node in a network namespace of its own), CoreDNS as
// cluster DNS, a local volume provisioner and an image registry every pull goes through.
// Everything comes from the tools cache, Debian packages and this checkout; nothing on the
// machine changes (REAL-NODE.md has the recipe and its workarounds).
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/bench/clusterdns"
)

// Options configure a bench. The zero value is a 3-node bench in a temporary directory.
type Options struct {
	// Dir holds everything the bench writes (certs, data, logs, kubeconfig). Empty: a
	// new temporary directory, removed by Stop. A given Dir is kept.
	Dir string
	// Nodes is the number of real nodes, bench-node-1..N (at most 5), spread over zone-a,
	// zone-b, zone-c (topology.kubernetes.io/zone). Default 3.
	Nodes int
	// IPv6 makes the bench dual-stack with IPv6 first: nodes, pods and Services get IPv6
	// addresses as their primary ones (status.podIP, a Service's ClusterIP), IPv4 beside.
	IPv6 bool
	// Scheme for Client(); default client-go's scheme (all built-in types). Add CRD
	// types to it before Start.
	Scheme *runtime.Scheme
	// ExtraAPIServerArgs are appended to kube-apiserver's command line.
	ExtraAPIServerArgs []string
	// Log receives progress lines (e.g. t.Logf); nil: silent.
	Log func(format string, args ...any)
	// OLM makes the registry also serve OLM's images (images.OLMImage, images.OPMImage),
	// which test/bench/olm.Install deploys. The first bench of a process that asks pays
	// for them (about 8 s to build and push); benches without OLM never do.
	OLM bool
	// NodeAgentsFirst gives each node's agents (containerd with its shims, the kubelet,
	// kube-proxy) the CPU before its pods under contention, as a real node's reserved
	// CPU would (their cgroup's cpu.shares is nodeAgentsCPUShares against the kubelet's
	// kubepods at 1024 per CPU). For benches that pack hundreds of pods onto a few
	// cores: without it the kubelets there miss their node leases, the nodes turn
	// NotReady and the control plane evicts every pod (BenchmarkScale, 300 clusters on 2
	// cores, 2026-12-07).
	NodeAgentsFirst bool
}

// Timings are measured by Start.
type Timings struct {
	ControlPlane time.Duration // start of Start until kube-apiserver /readyz answers ok
	Images       time.Duration // start of Start until the registry serves every image
	NodesReady   time.Duration // start of Start until every node is Ready and untainted
	ClusterDNS   time.Duration // start of Start until CoreDNS answers
}

// maxNodes bounds Options.Nodes: each node costs about 200 MB before its first pod.
const maxNodes = 5

// Bench is a running bench. All methods are safe for concurrent use.
type Bench struct {
	opts      Options
	dir       string
	removeDir bool
	// testDir: the directory is a test's temporary one (NewForTest), removed by the test's
	// cleanup, which a stopping signal skips: the signal handler removes it instead.
	testDir    atomic.Bool
	pki        *pki
	apiPort    int
	restConfig *rest.Config
	kubeconfig string
	client     client.Client
	scheme     *runtime.Scheme
	timings    Timings

	mu    sync.Mutex
	procs []*process // start order; stopped in reverse
	// kubeletStart keeps the nodes' kubelet starts apart (bootNode).
	kubeletStart sync.Mutex

	cgroups        *cgroupTree
	nodes          []*realNode
	nodeKubeconfig string
	withholder     *clusterdns.Withholder
	// stopProvisioner stops the local volume provisioner (nil before it started).
	stopProvisioner func()

	stopOnce sync.Once
}

var (
	benchSeq atomic.Int32
	// active guards the one-bench-per-process rule: every bench of a process shares the
	// namespace's network (its bridge, addresses and routes) and /run.
	active atomic.Bool
	// running is the process's bench, for a signal handler to stop.
	running atomic.Pointer[Bench]
)

// Start brings a bench up and returns once the apiserver is ready, every node is Ready
// (per kube-controller-manager: no not-ready taint) and the default ServiceAccount
// exists, so Pods can be created and scheduled right away. On error everything started
// is stopped again. It must run inside the bench namespace (see EnterNamespace).
func Start(ctx context.Context, opts Options) (_ *Bench, err error) {
	t0 := time.Now()
	if !InNamespace() {
		return nil, errors.New("bench: not inside the bench namespace; call bench.EnterNamespace() first thing in main/TestMain")
	}
	if missing := MissingBinaries(); len(missing) > 0 {
		return nil, &MissingBinariesError{Paths: missing}
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 3
	}
	if opts.Scheme == nil {
		opts.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(opts.Scheme); err != nil {
			return nil, err
		}
	}
	if opts.Nodes > maxNodes {
		return nil, fmt.Errorf("bench: %d nodes asked, at most %d", opts.Nodes, maxNodes)
	}
	benchSeq.Add(1)
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if !active.CompareAndSwap(false, true) {
		return nil, errors.New("bench: another bench is running in this process; they would share its network and /run (run benches one after another, or in separate test packages)")
	}
	b := &Bench{opts: opts, dir: opts.Dir, scheme: opts.Scheme}
	running.Store(b)
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "bench-"); err != nil {
			running.CompareAndSwap(b, nil)
			active.Store(false)
			return nil, err
		}
		b.removeDir = true
	}
	defer func() {
		if err != nil {
			// Keep the logs the error points at.
			b.removeDir = false
			b.Stop()
		}
	}()
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	if b.dir, err = filepath.Abs(b.dir); err != nil {
		return nil, err
	}

	release, err := reserveInotify(ctx, inotifyNeed(opts.Nodes), opts.Log)
	if err != nil {
		return nil, err
	}
	defer release()

	if b.pki, err = newPKI(filepath.Join(b.dir, "pki")); err != nil {
		return nil, fmt.Errorf("bench pki: %w", err)
	}
	if err := b.setupNetwork(); err != nil {
		return nil, fmt.Errorf("bench network: %w", err)
	}
	if err := b.startControlPlane(ctx); err != nil {
		return nil, err
	}
	b.timings.ControlPlane = time.Since(t0)
	opts.Log("bench: control plane ready in %v (dir %s)", b.timings.ControlPlane.Round(time.Millisecond), b.dir)

	pctx, pcancel := context.WithCancel(context.Background())
	pdone, err := startProvisioner(pctx, b.RestConfig(), filepath.Join(b.dir, "pv"), opts.Log)
	if err != nil {
		pcancel()
		return nil, fmt.Errorf("volume provisioner: %w", err)
	}
	b.stopProvisioner = func() { pcancel(); <-pdone }
	// The registry's images (the operator built and every image pushed) and the nodes
	// come up at the same time: no node pulls before a pod is scheduled, which is after
	// Start returns, and each takes several seconds of a test's bench start.
	registryDone := make(chan error, 1)
	go func() {
		err := b.startRegistry(ctx)
		imagesAt := time.Since(t0)
		if err == nil {
			b.timings.Images = imagesAt // read only after registryDone is received
		}
		registryDone <- err
	}()
	registryErr := func() error {
		if err := <-registryDone; err != nil {
			return fmt.Errorf("bench registry: %w", err)
		}
		return nil
	}
	if err := b.bootNodes(); err != nil {
		return nil, errors.Join(err, registryErr())
	}
	if err := b.waitNodesReady(ctx); err != nil {
		return nil, errors.Join(err, registryErr())
	}
	b.timings.NodesReady = time.Since(t0)
	if err := registryErr(); err != nil {
		return nil, err
	}
	opts.Log("bench: %d nodes ready in %v", opts.Nodes, b.timings.NodesReady.Round(time.Millisecond))
	if err := b.startControlPlaneProxy(); err != nil {
		return nil, err
	}
	if err := b.startClusterDNS(ctx); err != nil {
		return nil, fmt.Errorf("cluster DNS: %w", err)
	}
	b.timings.ClusterDNS = time.Since(t0)
	opts.Log("bench: cluster DNS ready in %v", b.timings.ClusterDNS.Round(time.Millisecond))
	return b, nil
}

// MissingBinariesError says which cached tools are not built yet.
type MissingBinariesError struct{ Paths []string }

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("bench binaries missing (build them with `bash hack/tools.sh`; cache %s): %v", CacheDir(), e.Paths)
}

// NodeName is the name of the i-th (0-based) node: bench-node-1, bench-node-2, ...
func NodeName(i int) string { return "bench-node-" + strconv.Itoa(i+1) }

// Zone is the zone label of the i-th node: zone-a, zone-b, zone-c, zone-a, ...
func Zone(i int) string { return "zone-" + string(rune('a'+i%3)) }

// Stop powers the nodes off (every container, shim and node daemon killed, their mounts,
// network namespaces and cgroups removed), then stops the control plane in reverse start
// order: SIGTERM, then SIGKILL after a grace period. Safe to call more than once.
func (b *Bench) Stop() {
	b.stopOnce.Do(func() {
		if b.stopProvisioner != nil {
			b.stopProvisioner()
		}
		if b.withholder != nil {
			_ = b.withholder.Close()
		}
		if err := b.stopNodes(); err != nil {
			b.opts.Log("bench: stopping nodes: %v", err)
			// Mounts may remain: never delete a directory a mount could still show.
			if b.hasMounts() {
				b.removeDir = false
			}
		}
		b.mu.Lock()
		procs := b.procs
		b.procs = nil
		b.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(10 * time.Second)
		}
		if b.removeDir {
			os.RemoveAll(b.dir)
		}
		running.CompareAndSwap(b, nil)
		active.Store(false)
	})
}

// RestConfig returns a copy of the admin (system:masters) client config.
func (b *Bench) RestConfig() *rest.Config { return rest.CopyConfig(b.restConfig) }

// Client is a controller-runtime client with the bench's scheme, as admin.
func (b *Bench) Client() client.Client { return b.client }

// Scheme is the scheme Client uses.
func (b *Bench) Scheme() *runtime.Scheme { return b.scheme }

// Kubeconfig is the path of an admin kubeconfig (valid inside the bench namespace).
func (b *Bench) Kubeconfig() string { return b.kubeconfig }

// Dir is the bench's directory: pki/, etcd/, kubelet/, logs/<process>.log.
func (b *Bench) Dir() string { return b.dir }

// Faults gives access to fault injection on the real parts (KillPod, NodeDown,
// PartitionNode, DelayDNS, ...).
func (b *Bench) Faults() *Faults { return &Faults{b: b} }

// APIServerPort is kube-apiserver's port on 127.0.0.1 inside the bench namespace.
func (b *Bench) APIServerPort() int { return b.apiPort }

// Timings reports how long Start took.
func (b *Bench) Timings() Timings { return b.timings }

// Nodes is the names of the bench's nodes.
func (b *Bench) Nodes() []string {
	n := make([]string, b.opts.Nodes)
	for i := range n {
		n[i] = NodeName(i)
	}
	return n
}
