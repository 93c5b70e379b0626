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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Kubelet is the emulated kubelet of all of Config.Nodes.
type Kubelet struct {
	cfg     Config
	log     logr.Logger
	cs      kubernetes.Interface
	nodes   map[string]*nodeState
	ips     *ipAllocator
	dns     *dnsManager
	backoff restartBackoff

	mu       sync.Mutex
	ctx      context.Context // Run's context, set when Run starts
	workers  map[types.UID]*podWorker
	latest   map[string]*podWorker // namespace/name -> newest worker, kept after the pod is gone
	wg       sync.WaitGroup
	stopping bool

	ready chan struct{}
	done  chan struct{}
}

// New validates cfg, applies defaults and prepares the kubelet; Run starts it.
func New(cfg Config) (*Kubelet, error) {
	if cfg.RestConfig == nil || len(cfg.Nodes) == 0 || cfg.RootDir == "" || cfg.ResolveImage == nil || cfg.HostsFile == "" {
		return nil, fmt.Errorf("kubelet config needs RestConfig, Nodes, RootDir, ResolveImage and HostsFile")
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	if cfg.PodIPPrefix == "" {
		cfg.PodIPPrefix = "127.1."
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.StorageClassName == "" {
		cfg.StorageClassName = "bench-local"
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = klog.Background()
	}
	log := cfg.Logger.WithName("bench-kubelet")
	root, err := filepath.Abs(cfg.RootDir)
	if err != nil {
		return nil, err
	}
	cfg.RootDir = root
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	ips, err := newIPAllocator(cfg.PodIPPrefix)
	if err != nil {
		return nil, err
	}
	rc := *cfg.RestConfig
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 100, 200
	}
	cs, err := kubernetes.NewForConfig(&rc)
	if err != nil {
		return nil, err
	}
	dns, err := newDNSManager(cfg.HostsFile, cfg.ClusterDomain, log.WithName("dns"))
	if err != nil {
		return nil, fmt.Errorf("hosts file: %w", err)
	}
	k := &Kubelet{
		cfg: cfg, log: log, cs: cs, ips: ips, dns: dns,
		nodes:   map[string]*nodeState{},
		backoff: newRestartBackoff(cfg.RestartBackoffInitial, cfg.RestartBackoffMax),
		workers: map[types.UID]*podWorker{},
		latest:  map[string]*podWorker{},
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	for i := range cfg.Nodes {
		n := cfg.Nodes[i]
		if n.Name == "" {
			return nil, fmt.Errorf("node %d has no name", i)
		}
		if n.IP == "" {
			n.IP = "127.0.0.1"
		}
		if n.CPU == "" {
			n.CPU = "4"
		}
		if n.Memory == "" {
			n.Memory = "8Gi"
		}
		if n.MaxPods == 0 {
			n.MaxPods = 110
		}
		if _, dup := k.nodes[n.Name]; dup {
			return nil, fmt.Errorf("node %q listed twice", n.Name)
		}
		k.nodes[n.Name] = newNodeState(n)
	}
	return k, nil
}

// Ready is closed once the Nodes are registered and the informers have synced.
func (k *Kubelet) Ready() <-chan struct{} { return k.ready }

// Done is closed when Run has returned, i.e. after every process it started has exited.
func (k *Kubelet) Done() <-chan struct{} { return k.done }

// Run registers the nodes, runs their pods, and blocks until ctx is done; then it kills
// every process it started (no API updates: to the cluster it looks like the machines
// died) and returns.
func (k *Kubelet) Run(ctx context.Context) error {
	defer close(k.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k.mu.Lock()
	k.ctx = ctx
	k.mu.Unlock()

	err := k.start(ctx)
	if err != nil && ctx.Err() == nil {
		k.log.Error(err, "kubelet failed to start")
		cancel()
	}
	<-ctx.Done()
	k.mu.Lock()
	k.stopping = true // no new workers after this point, so wg.Wait is final
	k.mu.Unlock()
	// Every worker watches ctx and kills its processes; wait for them all.
	k.wg.Wait()
	return err
}

func (k *Kubelet) start(ctx context.Context) error {
	for _, n := range k.nodes {
		if err := k.registerNode(ctx, n); err != nil {
			return err
		}
	}
	if err := k.ensureStorageClass(ctx); err != nil {
		return err
	}
	f := informers.NewSharedInformerFactory(k.cs, 0)
	podInf := f.Core().V1().Pods()
	svcInf := f.Core().V1().Services()
	pvcInf := f.Core().V1().PersistentVolumeClaims()
	pvInf := f.Core().V1().PersistentVolumes()
	scInf := f.Storage().V1().StorageClasses()
	k.dns.podLister, k.dns.svcLister = podInf.Lister(), svcInf.Lister()

	kickDNS := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.dns.trigger() },
		UpdateFunc: func(any, any) { k.dns.trigger() },
		DeleteFunc: func(any) { k.dns.trigger() },
	}
	if _, err := svcInf.Informer().AddEventHandler(kickDNS); err != nil {
		return err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.podChanged(o); k.dns.trigger() },
		UpdateFunc: func(_, o any) { k.podChanged(o); k.dns.trigger() },
		DeleteFunc: func(o any) { k.podDeleted(o); k.dns.trigger() },
	}); err != nil {
		return err
	}
	prov := &provisioner{k: k, pvcLister: pvcInf.Lister(), pvLister: pvInf.Lister(), scLister: scInf.Lister(),
		kick: make(chan struct{}, 1)}
	provKick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { prov.trigger() },
		UpdateFunc: func(any, any) { prov.trigger() },
		DeleteFunc: func(any) { prov.trigger() },
	}
	for _, inf := range []cache.SharedIndexInformer{pvcInf.Informer(), pvInf.Informer(), scInf.Informer()} {
		if _, err := inf.AddEventHandler(provKick); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	go k.dns.run(ctx)
	go prov.run(ctx)
	for _, n := range k.nodes {
		go k.heartbeat(ctx, n)
	}
	close(k.ready)
	k.log.Info("bench kubelet running", "nodes", len(k.nodes))
	return nil
}

// podChanged routes a Pod event to its worker, starting one for a new pod bound to one
// of our nodes.
func (k *Kubelet) podChanged(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	node, ours := k.nodes[pod.Spec.NodeName]
	if !ours {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx == nil || k.stopping {
		return
	}
	w, ok := k.workers[pod.UID]
	if !ok {
		// A pod that already finished (e.g. before a kubelet restart) is not run again.
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			return
		}
		w = newPodWorker(k, node, pod)
		k.workers[pod.UID] = w
		k.latest[pod.Namespace+"/"+pod.Name] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run()
			k.mu.Lock()
			delete(k.workers, pod.UID)
			k.mu.Unlock()
		}()
		return
	}
	w.update(pod)
}

func (k *Kubelet) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	k.mu.Unlock()
	if w != nil {
		w.objectGone()
	}
}

// worker returns the newest worker of namespace/name (running or finished).
func (k *Kubelet) worker(namespace, name string) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.latest[namespace+"/"+name]
}
