package etcdcluster

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// TestAfterActionRunsAfterASuccessfulStep: the failpoint is the reconciler's own (no
// package state another test or reconciler could see) and runs once per step done,
// with the cluster it was done for, before status is written.
func TestAfterActionRunsAfterASuccessfulStep(t *testing.T) {
	f, _ := stuckBootstrapFixture(t)
	type call struct {
		cluster string
		kind    planner.Kind
		phase   etcdv1beta2.ClusterPhase
	}
	var calls []call
	f.r.AfterAction = func(ctx context.Context, cluster string, a planner.Action) {
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "c"}, &c); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call{cluster, a.Kind, c.Status.Phase})
	}
	f.reconcileOnce(t)
	if len(calls) != 1 || calls[0].cluster != "ns/c" || calls[0].kind != planner.FixPodImage {
		t.Fatalf("failpoint calls %+v, want one FixPodImage for ns/c", calls)
	}
	var after etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "c"}, &after); err != nil {
		t.Fatal(err)
	}
	if calls[0].phase != "" || after.Status.Phase == "" {
		t.Errorf("phase %q when the failpoint ran, %q after the reconcile: want status written only after it",
			calls[0].phase, after.Status.Phase)
	}
}
