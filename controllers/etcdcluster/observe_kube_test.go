package etcdcluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// Each node is read once per observation; a node that cannot be read is not taken for
// evidence of a dead member.
func TestNodeIsReady(t *testing.T) {
	var gets int
	f := newProofFixtureWith(t, interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Node); ok {
			gets++
		}
		return cl.Get(ctx, key, obj, opts...)
	}}, nil, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-down"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}})
	cache := nodeCache{}
	for i := 0; i < 2; i++ {
		if f.r.node(context.Background(), "n-down", cache).ready {
			t.Error("a node whose Ready condition is Unknown counted as ready")
		}
		if !f.r.node(context.Background(), "n-gone", cache).ready {
			t.Error("a node that cannot be read counted as not ready")
		}
	}
	if gets != 2 {
		t.Errorf("%d node reads, want one per node", gets)
	}
}

// Without claims in the spec, none are listed and the planner is told of none; the
// members status recorded are still passed on (a total-loss restore avoids their names).
func TestObserveClaimsWithoutClaimSpec(t *testing.T) {
	f := newProofFixtureWith(t, interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		t.Error("listed claims of a cluster without a claim spec")
		return nil
	}}, nil, memberClaim("c-a", "uid-c"))
	f.cluster.Status.Members.Ready = []string{"c-a"}
	var obs planner.Observed
	if err := f.r.observeClaims(context.Background(), f.cluster, &obs); err != nil || obs.Claims != nil || fmt.Sprint(obs.KnownMembers) != "[c-a]" {
		t.Errorf("claims %v, known members %v, err %v", obs.Claims, obs.KnownMembers, err)
	}
}
