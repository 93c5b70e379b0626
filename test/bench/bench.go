// Package bench runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler from the tools cache) plus the emulated kubelet
// of test/bench/kubelet, inside the private mount+net namespaces EnterNamespace sets up.
// Tests get a cluster where Pods really run (as local processes) in a few seconds.
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

	"github.com/etcd-operator/etcd-operator/test/bench/kubelet"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a bench. The zero value is a 3-node bench in a temporary directory.
type Options struct {
	// Dir holds everything the bench writes (certs, data, logs, kubeconfig). Empty: a
	// new temporary directory, removed by Stop. A given Dir is kept.
	Dir string
	// Nodes is the number of emulated nodes, bench-node-1..N, spread over zone-a, zone-b,
	// zone-c (topology.kubernetes.io/zone). Default 3.
	Nodes int
	// ExtraImages maps image references to directories of executables, e.g. the
	// operator's image to the directory of a freshly built binary.
	ExtraImages map[string]string
	// Scheme for Client(); default client-go's scheme (all built-in types). Add CRD
	// types to it before Start.
	Scheme *runtime.Scheme
	// PodIPPrefix is handed to the kubelet, e.g. "127.1.". Default: a prefix unique in
	// this process, so two benches in one test binary do not hand out the same IPs.
	PodIPPrefix string
	// ExtraAPIServerArgs are appended to kube-apiserver's command line.
	ExtraAPIServerArgs []string
	// Log receives progress lines (e.g. t.Logf); nil: silent.
	Log func(format string, args ...any)
}

// Timings are measured by Start.
type Timings struct {
	ControlPlane time.Duration // start of Start until kube-apiserver /readyz answers ok
	NodesReady   time.Duration // start of Start until every node is Ready and untainted
}

// Bench is a running bench. All methods are safe for concurrent use.
type Bench struct {
	opts       Options
	dir        string
	removeDir  bool
	pki        *pki
	apiPort    int
	restConfig *rest.Config
	kubeconfig string
	client     client.Client
	scheme     *runtime.Scheme
	timings    Timings

	mu    sync.Mutex
	procs []*process // start order; stopped in reverse

	kubelet       *kubelet.Kubelet
	kubeletCancel context.CancelFunc
	kubeletDone   chan struct{}
	kubeletErr    error
	kubeletLog    *os.File

	stopOnce sync.Once
}

var (
	benchSeq atomic.Int32
	// active guards the one-bench-per-process rule: every bench of a process shares the
	// namespace's /etc/hosts, and the kubelet owns the DNS block in it.
	active atomic.Bool
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
	if opts.PodIPPrefix == "" {
		// Successive benches get fresh ranges, so a stale address from the previous
		// one can never reach a new pod.
		opts.PodIPPrefix = fmt.Sprintf("127.%d.", 1+(benchSeq.Add(1)-1)%200)
	}
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if !active.CompareAndSwap(false, true) {
		return nil, errors.New("bench: another bench is running in this process; they would share /etc/hosts (run benches one after another, or in separate test packages)")
	}
	b := &Bench{opts: opts, dir: opts.Dir, scheme: opts.Scheme}
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "bench-"); err != nil {
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

	if b.pki, err = newPKI(filepath.Join(b.dir, "pki")); err != nil {
		return nil, fmt.Errorf("bench pki: %w", err)
	}
	if err := b.startControlPlane(ctx); err != nil {
		return nil, err
	}
	b.timings.ControlPlane = time.Since(t0)
	opts.Log("bench: control plane ready in %v (dir %s)", b.timings.ControlPlane.Round(time.Millisecond), b.dir)

	if err := b.startKubelet(); err != nil {
		return nil, err
	}
	if err := b.waitNodesReady(ctx); err != nil {
		return nil, err
	}
	b.timings.NodesReady = time.Since(t0)
	opts.Log("bench: %d nodes ready in %v", opts.Nodes, b.timings.NodesReady.Round(time.Millisecond))
	return b, nil
}

// MissingBinariesError says which cached tools are not built yet.
type MissingBinariesError struct{ Paths []string }

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("bench binaries missing (build them with `bash hack/tools.sh`; cache %s): %v", CacheDir(), e.Paths)
}

func (b *Bench) startKubelet() error {
	nodes := make([]kubelet.NodeSpec, b.opts.Nodes)
	for i := range nodes {
		nodes[i] = kubelet.NodeSpec{
			Name:   NodeName(i),
			Labels: map[string]string{corev1.LabelTopologyZone: Zone(i)},
		}
	}
	logPath := filepath.Join(b.dir, "logs", "kubelet.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	b.kubeletLog = logFile
	kl, err := kubelet.New(kubelet.Config{
		Logger:        fileLogger(logFile),
		RestConfig:    rest.CopyConfig(b.restConfig),
		Nodes:         nodes,
		RootDir:       filepath.Join(b.dir, "kubelet"),
		ResolveImage:  ImageResolver(b.opts.ExtraImages),
		HostsFile:     HostsFile(),
		ClusterDomain: "cluster.local",
		APIServerHost: "127.0.0.1",
		APIServerPort: b.apiPort,
		PodIPPrefix:   b.opts.PodIPPrefix,
	})
	if err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.mu.Lock()
	b.kubelet, b.kubeletCancel, b.kubeletDone = kl, cancel, make(chan struct{})
	b.mu.Unlock()
	go func() {
		defer close(b.kubeletDone)
		err := kl.Run(ctx)
		b.mu.Lock()
		b.kubeletErr = err
		b.mu.Unlock()
	}()
	return nil
}

// kubeletExited returns an error if the kubelet's Run returned.
func (b *Bench) kubeletExited() error {
	select {
	case <-b.kubeletDone:
		b.mu.Lock()
		defer b.mu.Unlock()
		return fmt.Errorf("kubelet stopped: %v", b.kubeletErr)
	default:
		return nil
	}
}

// fileLogger logs to f, one line per entry, with timestamps: the kubelet runs in the
// test process, and its chatter belongs next to the other processes' logs, not in the
// test output.
func fileLogger(f *os.File) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 4})
}

// NodeName is the name of the i-th (0-based) node: bench-node-1, bench-node-2, ...
func NodeName(i int) string { return "bench-node-" + strconv.Itoa(i+1) }

// Zone is the zone label of the i-th node: zone-a, zone-b, zone-c, zone-a, ...
func Zone(i int) string { return "zone-" + string(rune('a'+i%3)) }

// Stop stops the kubelet (and with it every pod), then the control plane in reverse
// start order: SIGTERM, then SIGKILL after a grace period. Safe to call more than once.
func (b *Bench) Stop() {
	b.stopOnce.Do(func() {
		b.mu.Lock()
		cancel, done := b.kubeletCancel, b.kubeletDone
		b.mu.Unlock()
		if cancel != nil {
			cancel()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				// Keep going: the control plane must still be stopped. Pod processes of a
				// stuck kubelet die with this process (the kubelet's own Pdeathsig).
				b.opts.Log("bench: kubelet did not stop within 60s")
			}
		}
		if b.kubeletLog != nil {
			b.kubeletLog.Close()
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

// Kubelet gives access to fault injection (KillPod, NodeDown, DelayDNS, ...).
func (b *Bench) Kubelet() *kubelet.Kubelet { return b.kubelet }

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
