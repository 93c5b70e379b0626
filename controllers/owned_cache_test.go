//go:build integration

package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

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
	NeverCacheSecrets(&opts)
	CacheOnlyOwned(&opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := fixture.StartManager(t, mgr)

	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
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
	var pods corev1.PodList
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the cache holds the backup pod, created last", func() error {
		if err := c.List(ctx, &pods, client.InNamespace("default")); err != nil {
			return err
		}
		if !slices.Contains(names(&pods), "nightly-backup") {
			return fmt.Errorf("cached pods %v", names(&pods))
		}
		return nil
	})
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
	poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the cache holds the cluster's Service, created last", func() error {
		if err := c.List(ctx, &svcs, client.InNamespace("default")); err != nil {
			return err
		}
		if !slices.Contains(names(&svcs), "db") {
			return fmt.Errorf("cached Services %v", names(&svcs))
		}
		return nil
	})
	if got := names(&svcs); slices.Contains(got, "tenant-svc") || slices.Contains(got, "kubernetes") {
		t.Errorf("cached Services %v; want only the operator's", got)
	}
}
