package etcdcluster

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// laggingCache is the API server (a fake client) seen through an informer cache that may
// lag it: while frozen, a Get of the cluster returns the copy taken when it froze.
type laggingCache struct {
	frozen   *etcdv1beta2.EtcdCluster
	apiReads int
}

// The reconcile after a recorded step reads the step in status even when the cache has
// not caught up with the write (CI: a member defragmented again because the next
// reconcile read the run without it); with the cache in step, the cache is read, not the
// API server.
func TestGetClusterReadsItsOwnWrites(t *testing.T) {
	ctx := context.Background()
	ec := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	ec.Status.Maintenance = &etcdv1beta2.MaintenanceStatus{Run: &etcdv1beta2.MaintenanceRun{Trigger: planner.TriggerNoSpace, CompactedRevision: 30}}
	lag := &laggingCache{}
	srv := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(ec).WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).Build()
	cache := interceptor.NewClient(srv.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if cl, ok := obj.(*etcdv1beta2.EtcdCluster); ok && lag.frozen != nil {
				lag.frozen.DeepCopyInto(cl)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	api := interceptor.NewClient(srv.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			lag.apiReads++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	r := newTestClusterReconciler(t, cache, record.NewFakeRecorder(10), func() time.Time { return time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC) })
	r.APIReader = api
	key := client.ObjectKeyFromObject(ec)
	read := func(what string, wantAPIReads int) *etcdv1beta2.EtcdCluster {
		t.Helper()
		var c etcdv1beta2.EtcdCluster
		if err := r.getCluster(ctx, key, &c); err != nil {
			t.Fatal(err)
		}
		if lag.apiReads != wantAPIReads {
			t.Fatalf("%s: %d reads from the API server, want %d", what, lag.apiReads, wantAPIReads)
		}
		return &c
	}

	c := read("before any write", 0)
	lag.frozen = c.DeepCopy() // the cache will not see the next write for a while
	// A reconcile defragments member a and records it.
	w := r.statusWriterFor(c)
	c.Status.Maintenance.Run.Defragmented = []string{"a"}
	if err := w.flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got := read("cache behind the write", i+1)
		if run := got.Status.Maintenance.Run; run == nil || !slices.Equal(run.Defragmented, []string{"a"}) {
			t.Fatalf("read %d with the cache behind: run %+v, want member a recorded", i, run)
		}
	}
	lag.frozen = nil // the watch event arrived
	read("cache caught up", 2)
	read("cache caught up, again", 2)

	// The run finishes (its record cleared); the stale cache still has it. What the API
	// server omits must not survive from the cached copy.
	c = read("before the finish", 2)
	lag.frozen = c.DeepCopy()
	w = r.statusWriterFor(c)
	c.Status.Maintenance.Run = nil
	if err := w.flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := read("cache behind the finish", 3); got.Status.Maintenance.Run != nil {
		t.Fatalf("with the cache behind: run %+v, want none (finished)", got.Status.Maintenance.Run)
	}

	// Someone else changed the cluster after the write and the cache shows that: one read
	// of the API server finds the cache current, and then the cache is read again.
	lag.frozen = nil
	var cur etcdv1beta2.EtcdCluster
	if err := srv.Get(ctx, key, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Size = 5
	if err := srv.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if got := read("cache past the write", 4); got.Spec.Size != 5 {
		t.Fatalf("size %d, want 5", got.Spec.Size)
	}
	read("cache past the write, again", 4)
}
