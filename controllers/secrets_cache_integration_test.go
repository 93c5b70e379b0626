//go:build integration

package controllers

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// recordingCache notes every object type the manager's client asks its cache for; asking
// for a type starts a cluster-wide informer (list + watch) for it.
type recordingCache struct {
	cache.Cache
	mu    sync.Mutex
	types []string
}

// TestManagerNeverCachesSecrets: with the operator's cache options, reading a Secret
// through the manager's client goes to the API server, never to an informer.
func TestManagerNeverCachesSecrets(t *testing.T) {
	cfg := fixture.Envtest(t)

	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	rec := &recordingCache{}
	opts := ctrl.Options{
		Scheme:  s,
		Metrics: metricsserver.Options{BindAddress: "0"},
		NewCache: func(cfg *rest.Config, o cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, o)
			rec.Cache = c
			return rec, err
		},
	}
	neverCacheSecrets(&opts)
	ctx, mgr, direct := startWithDirectClient(t, cfg, opts)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v")}}
	if err := direct.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	var got corev1.Secret
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(sec), &got); err != nil || string(got.Data["k"]) != "v" {
		t.Fatalf("get secret through the manager's client: %v %v", err, got.Data)
	}
	// A control: other types do go through the cache, so the recorder works.
	var pods corev1.PodList
	if err := mgr.GetClient().List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if slices.Contains(rec.types, "Secret") || !slices.Contains(rec.types, "Pod") {
		t.Errorf("cache asked for %v; want Pod and never Secret", rec.types)
	}
}

// startWithDirectClient starts a manager with opts on cfg; it returns the manager's
// context, the manager, and a client that reads and writes the API server directly.
func startWithDirectClient(t *testing.T, cfg *rest.Config, opts ctrl.Options) (context.Context, ctrl.Manager, client.Client) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := fixture.StartManager(t, mgr)
	direct, err := client.New(cfg, client.Options{Scheme: opts.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, mgr, direct
}

func (c *recordingCache) note(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.types = append(c.types, strings.TrimSuffix(reflect.TypeOf(obj).Elem().Name(), "List"))
}

func (c *recordingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.note(obj)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *recordingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.note(list)
	return c.Cache.List(ctx, list, opts...)
}

func (c *recordingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.note(obj)
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *recordingCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.mu.Lock()
	c.types = append(c.types, gvk.Kind)
	c.mu.Unlock()
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}
