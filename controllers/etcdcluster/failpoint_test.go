package etcdcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// TestAfterActionRunsAfterASuccessfulStep: the failpoint is the reconciler's own (no
// package state another test or reconciler could see) and runs once per step done,
// with the cluster it was done for, before status is written.
func TestAfterActionRunsAfterASuccessfulStep(t *testing.T) {
	names := []string{"c-aaaaaaa1", "c-aaaaaaa2", "c-aaaaaaa3"}
	var objs []client.Object
	for _, n := range names {
		p := ownedMemberPod(n, "uid-c")
		p.Annotations = map[string]string{render.AnnotationVersion: "3.6.99"}
		p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.6.99"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
		objs = append(objs, p)
	}
	f := newProofFixture(t, nil, objs...)
	st := f.cluster.DeepCopy()
	st.Status.BootstrapMembers = names
	if err := f.c.Status().Update(context.Background(), st); err != nil {
		t.Fatal(err)
	}
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
