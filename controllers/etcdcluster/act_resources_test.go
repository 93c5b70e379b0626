package etcdcluster

import (
	"context"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestEnsureBudgetMatchesChart: the budget ensureBudget writes from the one render of
// ensureServices is the one the chart renders when given the operator's number
// directly, for every case of render.BudgetMinAvailable (so taking the number out of
// a second render changed nothing), and a later observation updates it in place.
func TestEnsureBudgetMatchesChart(t *testing.T) {
	for _, tc := range []struct {
		name            string
		size, members   int
		noNodeToLeaveTo bool
	}{
		{"size 3", 3, 3, false},
		{"a successor joined", 3, 4, false},
		{"nowhere to go", 3, 3, true},
		{"size 1 nowhere to go", 1, 1, true},
		{"size 5 scaling down", 5, 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture.Scheme()
			cl := &etcdv1beta2.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", UID: "uid-b"},
				Spec:       etcdv1beta2.EtcdClusterSpec{Size: tc.size, Version: "3.6.16"},
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(cl).Build()
			r := newTestReconciler(t, Reconciler{Client: c, Scheme: s})
			ctx := context.Background()
			tmpl, err := r.ensureServices(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			obs := &observation{planner: planner.Observed{NoNodeToLeaveTo: tc.noNodeToLeaveTo}}
			for i := 0; i < tc.members; i++ {
				obs.planner.Members = append(obs.planner.Members, planner.Member{})
			}
			if err := r.ensureBudget(ctx, cl, obs, tmpl); err != nil {
				t.Fatal(err)
			}
			want := render.BudgetMinAvailable(max(tc.size, tc.members), tc.noNodeToLeaveTo)
			objs, err := r.renderer.Render(render.Input{Cluster: cl, ClusterDomain: r.ClusterDomain, Budget: want})
			if err != nil {
				t.Fatal(err)
			}
			var chart *policyv1.PodDisruptionBudget
			for _, o := range objs {
				if p, ok := o.(*policyv1.PodDisruptionBudget); ok {
					chart = p
				}
			}
			var got policyv1.PodDisruptionBudget
			if err := c.Get(ctx, client.ObjectKeyFromObject(chart), &got); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got.Spec, chart.Spec) || !equality.Semantic.DeepEqual(got.Labels, chart.Labels) {
				t.Errorf("budget written %+v %v, chart renders %+v %v", got.Spec, got.Labels, chart.Spec, chart.Labels)
			}
			if got.Spec.MinAvailable.IntValue() != want {
				t.Errorf("minAvailable %v, want %d", got.Spec.MinAvailable, want)
			}
			// A later observation (the successor gone) lowers it in place.
			obs.planner.Members = obs.planner.Members[:tc.size]
			obs.planner.NoNodeToLeaveTo = false
			if err := r.ensureBudget(ctx, cl, obs, tmpl); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(chart), &got); err != nil {
				t.Fatal(err)
			}
			if w := render.BudgetMinAvailable(tc.size, false); got.Spec.MinAvailable.IntValue() != w {
				t.Errorf("after the next observation minAvailable %v, want %d", got.Spec.MinAvailable, w)
			}
		})
	}
}
