// Package cacheheap measures the operator manager's heap against unrelated objects in the
// namespaces it watches (issue #27 item 6): its informers for pods, claims, Services and
// budgets hold only what the operator makes (controllers.ApplyCacheOptions), so a tenant's
// 2,000 large pods must leave the heap where it was. It runs against envtest's API server
// (no nodes needed: the cache is what is measured) with `make benchmark`.
package cacheheap

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-operator/etcd-operator/controllers"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

const (
	clusters       = 20                // N clusters' objects the operator holds
	annotationSize = 200 << 10         // bytes of each unrelated pod's annotation
	defaultPods    = 2000              // unrelated pods; CACHEHEAP_PODS overrides
	waitCache      = 5 * time.Minute   // for the cache to see the sentinel object
	createWorkers  = 8                 // concurrent creates of unrelated pods
	operatorNS     = "etcd-tenant-ops" // the clusters' namespace
	unrelatedNS    = "etcd-tenant-web" // another watched namespace, the unrelated pods'
)

// heap is the live heap after a full collection.
func heap() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkOperatorHeapUnrelatedPods reports heap-ratio: the manager's heap after 2,000
// unrelated pods with 200 KiB annotations were created, over its heap with only the N
// clusters' objects (1.0 is flat; a cache holding those pods would be ~400 MiB larger),
// and cache-KiB/cluster: what one 3-member cluster's objects add to the heap of a
// manager whose cache was empty (the cache's share of the heap per cluster; the etcd
// clients a running operator keeps per cluster are measured by BenchmarkScale).
func BenchmarkOperatorHeapUnrelatedPods(b *testing.B) {
	pods := defaultPods
	if v := os.Getenv("CACHEHEAP_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("CACHEHEAP_PODS: %v", err)
		}
		pods = n
	}
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(b)}
	cfg := testenv.StartEnvtest(b, env)
	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	controllers.ApplyCacheOptions(&opts, "")
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.Cleanup(func() { cancel(); <-done })
	// The informers the EtcdCluster controller starts (its Owns), without its reconciles,
	// which would dial members that envtest never runs.
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	go func() { defer close(done); _ = mgr.Start(ctx) }()

	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	for _, ns := range []string{operatorNS, unrelatedNS} {
		if err := direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("the manager's cache did not sync")
	}
	empty := heap()
	for i := range clusters {
		for _, o := range clusterObjects(fmt.Sprintf("db-%d", i)) {
			if err := direct.Create(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	}
	waitCached(ctx, b, mgr.GetClient(), operatorNS, fmt.Sprintf("db-%d-2", clusters-1))
	before := heap()

	b.ResetTimer()
	createUnrelated(ctx, b, direct, pods)
	// The operator's next pod, created after all of them: once the cache holds it, it
	// has seen every earlier pod event that its selector lets through.
	sentinel := memberPod("late", 0)
	if err := direct.Create(ctx, sentinel); err != nil {
		b.Fatal(err)
	}
	waitCached(ctx, b, mgr.GetClient(), operatorNS, sentinel.Name)
	after := heap()
	b.StopTimer()

	perCluster := (float64(before) - float64(empty)) / clusters
	b.ReportMetric(float64(after)/float64(before), "heap-ratio")
	b.ReportMetric(perCluster/(1<<10), "cache-KiB/cluster")
	b.ReportMetric(float64(before)/(1<<20), "heap-before-MiB")
	b.ReportMetric(float64(after)/(1<<20), "heap-after-MiB")
	b.Logf("empty cache: heap %.1f MiB; %d clusters' objects: %.1f MiB (%.1f KiB per cluster); after %d unrelated pods of %d KiB annotations: %.1f MiB (ratio %.2f)",
		float64(empty)/(1<<20), clusters, float64(before)/(1<<20), perCluster/(1<<10), pods, annotationSize>>10, float64(after)/(1<<20), float64(after)/float64(before))
}

// clusterObjects are the objects of one 3-member cluster as the operator labels them.
func clusterObjects(cluster string) []client.Object {
	var out []client.Object
	for m := range 3 {
		p := memberPod(cluster, m)
		out = append(out, p, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: operatorNS, Labels: p.Labels},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		})
	}
	labels := render.ClusterLabels(cluster)
	minAvailable := intstr.FromInt32(2)
	return append(out,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: operatorNS, Labels: labels},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-client", Namespace: operatorNS, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: operatorNS, Labels: labels},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}},
	)
}

func memberPod(cluster string, i int) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", cluster, i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNS, Labels: render.MemberLabels(cluster, name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerName, Image: "etcd"}}},
	}
}

// createUnrelated creates n pods with a large annotation in unrelatedNS, labelled as a
// tenant's web app would be.
func createUnrelated(ctx context.Context, b *testing.B, c client.Client, n int) {
	big := strings.Repeat("x", annotationSize)
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		errMu sync.Mutex
		first error
	)
	for range createWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: unrelatedNS,
						Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"example.com/blob": big}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
				}
				if err := c.Create(ctx, p); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatalf("create unrelated pods: %v", first)
	}
}

func waitCached(ctx context.Context, b *testing.B, c client.Client, ns, name string) {
	poll.Eventually(b, waitCache, 100*time.Millisecond, "the cache holds pod "+ns+"/"+name, func() error {
		var p corev1.Pod
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
	})
}
