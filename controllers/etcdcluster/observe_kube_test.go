package etcdcluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
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

// Claims never bound to a volume are told apart: they never held data, so a bootstrap
// that never formed may recreate them from a corrected claim spec.
func TestObserveUnboundClaims(t *testing.T) {
	bound := memberClaim("c-a", "uid-c")
	bound.Spec.VolumeName, bound.Status.Phase = "pv-a", corev1.ClaimBound
	pending := memberClaim("c-b", "uid-c")
	pending.Status.Phase = corev1.ClaimPending
	f := newProofFixtureWith(t, interceptor.Funcs{}, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{}}
	}, bound, pending)
	var obs planner.Observed
	if err := f.r.observeClaims(context.Background(), f.cluster, &obs); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(obs.Claims) != "[c-a c-b]" || fmt.Sprint(obs.UnboundClaims) != "[c-b]" {
		t.Errorf("claims %v, unbound %v; want [c-a c-b], [c-b]", obs.Claims, obs.UnboundClaims)
	}
}
