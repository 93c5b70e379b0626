//go:build integration

package controllers

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// TestManagerCachesOnlyOwned: with the operator's cache options, a cached List of pods
// (and claims, Services) in a namespace returns the member and backup pods the operator
// makes and never a tenant's unrelated ones, which the APIReader still reads; cached
// objects carry no managedFields.
func TestManagerCachesOnlyOwned(t *testing.T) {
	cfg := fixture.Envtest(t)

	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	opts := ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	ApplyCacheOptions(&opts, "")
	ctx, mgr, direct := startWithDirectClient(t, cfg, opts)
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels,
				Annotations: map[string]string{"big": strings.Repeat("x", 1024)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	// The tenant's objects come first: the cache receives one ordered stream per kind,
	// so once it holds the operator's last-created pod (Service), an earlier tenant pod
	// (Service) would have arrived too had it been selected.
	objs := []client.Object{
		pod("tenant-web", map[string]string{"app": "web"}),
		pod("tenant-plain", nil),
		pod("member-0", render.MemberLabels("db", "member-0")),
		pod("nightly-backup", map[string]string{render.LabelApp: render.AppOperatorPod}),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "tenant-svc", Namespace: "default"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", Labels: render.ClusterLabels("db")},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 2379}}}},
	}
	for _, o := range objs {
		if err := direct.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	c := mgr.GetClient()
	names := func(list client.ObjectList) []string {
		var out []string
		switch l := list.(type) {
		case *corev1.PodList:
			for _, p := range l.Items {
				out = append(out, p.Name)
			}
		case *corev1.ServiceList:
			for _, p := range l.Items {
				out = append(out, p.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	// cached waits until the cache holds name, created last, in list.
	cached := func(list client.ObjectList, name, what string) {
		t.Helper()
		poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the cache holds "+what+", created last", func() error {
			if err := c.List(ctx, list, client.InNamespace("default")); err != nil {
				return err
			}
			if !slices.Contains(names(list), name) {
				return fmt.Errorf("cached %T %v", list, names(list))
			}
			return nil
		})
	}
	var pods corev1.PodList
	cached(&pods, "nightly-backup", "the backup pod")
	if got, want := names(&pods), []string{"member-0", "nightly-backup"}; !slices.Equal(got, want) {
		t.Errorf("cached pods %v; want only the operator's %v", got, want)
	}
	for _, p := range pods.Items {
		if len(p.ManagedFields) != 0 {
			t.Errorf("cached pod %s carries %d managedFields entries", p.Name, len(p.ManagedFields))
		}
	}
	var tenant corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "tenant-web"}, &tenant); err == nil {
		t.Error("a cached Get found the tenant's pod")
	}
	if err := mgr.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: "default", Name: "tenant-web"}, &tenant); err != nil {
		t.Errorf("the APIReader must still read a tenant's pod: %v", err)
	}

	var svcs corev1.ServiceList
	cached(&svcs, "db", "the cluster's Service")
	if got := names(&svcs); slices.Contains(got, "tenant-svc") || slices.Contains(got, "kubernetes") {
		t.Errorf("cached Services %v; want only the operator's", got)
	}
}

// TestOperatorCacheHoldsNoUnrelatedObjects runs the operator's whole controller setup
// with main.go's cache options and fills other namespaces with 2,000 pods it did not
// make: its cache then holds none of them, only the member pod of a cluster (here one a
// CoreOS operator made, which a takeover must see). Every kind the operator caches is
// one it selects by label or needs whole, so a new broad watch fails this test until
// it is looked at; Nodes and EtcdClusters are cached without what the operator never
// reads.
func TestOperatorCacheHoldsNoUnrelatedObjects(t *testing.T) {
	cfg := fixture.Envtest(t, filepath.Join("..", "config", "crd", "bases"))
	s := fixture.Scheme()
	utilruntime.Must(etcdv1.AddToScheme(s))
	rec := &recordingCache{}
	opts := ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: logr.Discard(),
		// Another test of this package registers the controllers in this process too.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewCache: func(cfg *rest.Config, o cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, o)
			rec.Cache = c
			return rec, err
		}}
	ApplyCacheOptions(&opts, "") // as main.go and the e2e framework
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWithManager(mgr, Options{ClusterDomain: "cluster.local", OperatorImage: "op:test"}); err != nil {
		t.Fatal(err)
	}
	ctx := fixture.StartManager(t, mgr)

	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 500, 500
	direct, err := client.New(fast, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	tenants := []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d"}
	for _, ns := range tenants {
		fixture.MustCreate(ctx, t, direct, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a"}}}
	fixture.MustCreate(ctx, t, direct, node)
	node.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.invalid/big:1"}, SizeBytes: 1 << 30}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := direct.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Paused: the test is about what the cache holds, not what the operator does.
	ec := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default",
		Annotations: map[string]string{lastApplied: `{"spec":{"size":3}}`}},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Paused: true}}
	fixture.MustCreate(ctx, t, direct, ec)

	const unrelated = 2000
	var (
		wg   sync.WaitGroup
		next = make(chan int)
		errs = make(chan error, unrelated)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				labels := map[string]string{"app": "web"}
				if i%2 == 1 {
					labels = map[string]string{"app.kubernetes.io/name": "etcd", "etcd_cluster": "theirs"} // looks close, is not ours
				}
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: tenants[i%len(tenants)], Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}}}}
				if err := direct.Create(ctx, p); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range unrelated {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create an unrelated pod: %v", err)
	}
	// Created last: once the cache holds it, it has seen every earlier pod event its
	// selector lets through (one ordered watch stream per kind).
	coreos := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old-0000", Namespace: "tenant-d",
		Labels: map[string]string{"app": "etcd", "etcd_cluster": "old"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
	fixture.MustCreate(ctx, t, direct, coreos)

	c := mgr.GetClient()
	poll.Eventually(t, 60*time.Second, 100*time.Millisecond, "the cache holds CoreOS's member pod, created last", func() error {
		var p corev1.Pod
		return c.Get(ctx, client.ObjectKeyFromObject(coreos), &p)
	})
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, p := range pods.Items {
		if slices.Contains(tenants, p.Namespace) {
			held = append(held, p.Namespace+"/"+p.Name)
		}
	}
	if len(held) != 1 || held[0] != "tenant-d/old-0000" {
		t.Errorf("the cache holds %d pods of the tenants' namespaces (first: %v); want only CoreOS's member pod", len(held), held[:min(len(held), 5)])
	}
	t.Logf("%d unrelated pods created; the cache holds %d pods in all", unrelated, len(pods.Items))

	// Nodes and EtcdClusters come on watch streams of their own: the pod created last
	// says nothing of them, so their status update (and creation) is waited for here.
	var cachedNode corev1.Node
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the cache holds the Node's status update (its conditions)", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: node.Name}, &cachedNode); err != nil {
			return err
		}
		if len(cachedNode.Status.Conditions) == 0 {
			return fmt.Errorf("cached Node without conditions yet")
		}
		return nil
	})
	if len(cachedNode.Status.Images) != 0 || cachedNode.Labels["zone"] != "a" {
		t.Errorf("cached Node: %d images (want 0), labels %v (want kept)", len(cachedNode.Status.Images), cachedNode.Labels)
	}
	var cachedCluster etcdv1beta2.EtcdCluster
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the cache holds the EtcdCluster", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(ec), &cachedCluster)
	})
	if _, ok := cachedCluster.Annotations[lastApplied]; ok || len(cachedCluster.ManagedFields) != 0 {
		t.Errorf("cached EtcdCluster keeps what the operator never reads: annotations %v, %d managedFields",
			cachedCluster.Annotations, len(cachedCluster.ManagedFields))
	}

	// Every kind in the cache: the operator's own CRs, the four kinds selected by label,
	// and Nodes (few, stripped). Anything else is a broad watch to review.
	known := []string{"EtcdCluster", "EtcdBackup", "EtcdRestore", "Pod", "Service", "PersistentVolumeClaim",
		"PodDisruptionBudget", "Node"}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, k := range rec.types {
		if !slices.Contains(known, k) {
			t.Errorf("the operator caches %s, which is neither its own nor selected by label: select it in cacheOnlyOwned or read it with the APIReader", k)
		}
	}
}
