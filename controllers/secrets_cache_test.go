package controllers

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// recordingCache notes every object type the manager's client asks its cache for; asking
// for a type starts a cluster-wide informer (list + watch) for it.
type recordingCache struct {
	cache.Cache
	mu    sync.Mutex
	types []string
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

// TestManagerNeverCachesSecrets: with the operator's cache options, reading a Secret
// through the manager's client goes to the API server, never to an informer.
func TestManagerNeverCachesSecrets(t *testing.T) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })

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
	NeverCacheSecrets(&opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
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

// TestGeneratedRBACSecretsGetOnly: the operator's cluster-wide role may read a Secret it
// is told about, never list or watch them all (nor update or delete one).
func TestGeneratedRBACSecretsGetOnly(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(raw), "\n---") {
		var role rbacv1.ClusterRole // a Role has the same shape
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, r := range role.Rules {
			if !slices.Contains(r.APIGroups, "") || !(slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")) {
				continue
			}
			found = true
			// create: the operator makes the Secrets it owns (a cluster's etcd root
			// Secret); create reads nothing and replaces nothing.
			verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "create" })
			if len(verbs) != 1 || verbs[0] != "get" || len(r.ResourceNames) != 0 {
				t.Errorf("ClusterRole rule %+v: secrets must be get (and create) only", r)
			}
		}
	}
	if !found {
		t.Error("no ClusterRole rule for secrets; the operator reads TLS and S3 credential Secrets")
	}
}
