package etcdcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

func TestScopeManages(t *testing.T) {
	none := map[string]string{}
	wide := map[string]string{etcdv1beta2.ScopeAnnotation: etcdv1beta2.ScopeClusterWide}
	other := map[string]string{etcdv1beta2.ScopeAnnotation: "team-a"}
	empty := map[string]string{etcdv1beta2.ScopeAnnotation: ""}
	for _, tc := range []struct {
		scope                   Scope
		none, wide, other, empt bool
	}{
		{ScopeAll, true, true, true, true},
		{"", true, true, true, true},
		{ScopeNamespaced, true, false, false, false},
		{ScopeClusterWide, false, true, false, false},
	} {
		for _, c := range []struct {
			ann  map[string]string
			want bool
		}{{none, tc.none}, {wide, tc.wide}, {other, tc.other}, {empty, tc.empt}} {
			if got := tc.scope.Manages(c.ann); got != c.want {
				t.Errorf("%q.Manages(%v) = %v, want %v", tc.scope, c.ann, got, c.want)
			}
		}
	}
}

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{"": ScopeAll, "ignore": ScopeAll, "namespaced": ScopeNamespaced, "clusterwide": ScopeClusterWide} {
		if got, err := ParseScope(in); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"cluster-wide", "all", "ClusterWide"} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) accepted", bad)
		}
	}
}

// TestReconcileLeavesOtherScopesAlone: a namespaced instance (CoreOS's default) given a
// cluster annotated for a cluster-wide instance creates nothing and writes no status,
// while an unannotated cluster beside it is bootstrapped.
func TestReconcileLeavesOtherScopesAlone(t *testing.T) {
	s := fixture.Scheme()
	wide := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: "default", UID: "uid-wide",
			Annotations: map[string]string{etcdv1beta2.ScopeAnnotation: etcdv1beta2.ScopeClusterWide}},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16"},
	}
	mine := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default", UID: "uid-mine"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16"},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(wide, mine).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).Build()
	r := newTestClusterReconciler(t, c, record.NewFakeRecorder(100), time.Now)
	r.Scope = ScopeNamespaced
	ctx := context.Background()

	for _, cl := range []*etcdv1beta2.EtcdCluster{wide, mine} {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cl)}); err != nil {
			t.Fatalf("reconcile %s: %v", cl.Name, err)
		}
	}

	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["etcd_cluster"] != "mine" {
			t.Errorf("pod %s created for a cluster of another scope", p.Name)
		}
	}
	var got etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(wide), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) > 0 || got.Status.Phase != "" {
		t.Errorf("status of the other scope's cluster written: %+v", got.Status)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mine), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) == 0 {
		t.Errorf("the managed cluster got no status: %+v", got.Status)
	}
	if len(pods.Items) == 0 {
		t.Error("the managed cluster got no member pod")
	}
}
