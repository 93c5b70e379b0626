package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

func statusWriterFixture(t *testing.T, funcs interceptor.Funcs) (*Reconciler, *etcdv1beta2.EtcdCluster, client.Client, *record.FakeRecorder) {
	t.Helper()
	ec := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: 3}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	c := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(ec).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).WithInterceptorFuncs(funcs).Build()
	rec := record.NewFakeRecorder(10)
	r := newTestClusterReconciler(t, c, rec, func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) })
	var got etcdv1beta2.EtcdCluster
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ec), &got); err != nil {
		t.Fatal(err)
	}
	return r, &got, c, rec
}

// countingStatusPatches counts the status patches the fixture's client serves in n.
func countingStatusPatches(n *int) interceptor.Funcs {
	return interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			*n++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
}

func stored(t *testing.T, c client.Client) *etcdv1beta2.EtcdCluster {
	t.Helper()
	var got etcdv1beta2.EtcdCluster
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "c"}, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

// A checkpoint is written at once; the flush then writes what changed after it, and
// both end up stored, with the generation the status describes.
func TestStatusWriterCheckpointThenFlush(t *testing.T) {
	r, ec, c, _ := statusWriterFixture(t, interceptor.Funcs{})
	w := r.statusWriterFor(ec)
	ec.Status.BootstrapMembers = []string{"c-a", "c-b", "c-c"}
	if err := w.checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, c); len(got.Status.BootstrapMembers) != 3 {
		t.Fatalf("after checkpoint: bootstrap members %v, want written", got.Status.BootstrapMembers)
	}
	ec.Status.Phase = etcdv1beta2.ClusterPhaseCreating
	if err := w.flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got := stored(t, c)
	if len(got.Status.BootstrapMembers) != 3 || got.Status.Phase != etcdv1beta2.ClusterPhaseCreating || got.Status.ObservedGeneration != 3 {
		t.Errorf("after flush: %+v", got.Status)
	}
}

// An error the reconcile returns without having reported it becomes the Reconciled
// condition and a warning event: the user sees it in status, not only in the log.
func TestStatusWriterFlushReportsAnUnreportedError(t *testing.T) {
	r, ec, c, rec := statusWriterFixture(t, interceptor.Funcs{})
	w := r.statusWriterFor(ec)
	boom := errors.New("list pods: connection refused")
	if err := w.flush(context.Background(), boom); !errors.Is(err, boom) {
		t.Fatalf("flush returned %v, want the reconcile's error", err)
	}
	var cond *etcdv1beta2.ClusterCondition
	conds := stored(t, c).Status.Conditions
	for i := range conds {
		if conds[i].Type == etcdv1beta2.ClusterConditionReconciled {
			cond = &conds[i]
		}
	}
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonObserveFailed || !strings.Contains(cond.Message, "connection refused") {
		t.Fatalf("Reconciled condition %+v, want False/%s naming the error", cond, etcdv1beta2.ReasonObserveFailed)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, corev1.EventTypeWarning) || !strings.Contains(e, "connection refused") {
			t.Errorf("event %q, want a warning naming the error", e)
		}
	default:
		t.Error("no event for the failure")
	}
}

// When the status write itself fails, the caller gets both errors, so the reconcile is
// retried and the log says why.
func TestStatusWriterFlushReturnsTheWriteError(t *testing.T) {
	r, ec, _, _ := statusWriterFixture(t, interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return errors.New("apiserver unavailable")
		},
	})
	w := r.statusWriterFor(ec)
	ec.Status.Phase = etcdv1beta2.ClusterPhaseRunning
	if err := w.flush(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "apiserver unavailable") {
		t.Fatalf("flush = %v, want the write's error", err)
	}
	if err := w.checkpoint(context.Background()); err == nil || !strings.Contains(err.Error(), "record status before acting") {
		t.Fatalf("checkpoint = %v, want the write's error, said as a checkpoint", err)
	}
}

// The Reconciled condition reaches the metric with every flush, failures that count no
// action included.
func TestStatusWriterExportsReconciled(t *testing.T) {
	r, ec, _, _ := statusWriterFixture(t, interceptor.Funcs{})
	t.Cleanup(func() { forgetClusterMetrics("ns", "c") })
	w := r.statusWriterFor(ec)
	if err := w.flush(context.Background(), errors.New("cannot read the TLS secret")); err == nil {
		t.Fatal("the error was swallowed")
	}
	if v := testutil.ToFloat64(clusterReconciled.WithLabelValues("ns", "c")); v != 0 {
		t.Errorf("after a failure: etcd_operator_cluster_reconciled = %v, want 0", v)
	}
	r.reportReconciled(ec, "", nil, false, "2026-12-03T00:00:00Z")
	if err := w.flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(clusterReconciled.WithLabelValues("ns", "c")); v != 1 {
		t.Errorf("after a success: etcd_operator_cluster_reconciled = %v, want 1", v)
	}
}

// A reconcile that changed nothing writes nothing: at rest, a cluster costs the API
// server no request per resync. A change after it is still written.
func TestStatusWriterSkipsUnchangedStatus(t *testing.T) {
	patches := 0
	r, ec, c, _ := statusWriterFixture(t, countingStatusPatches(&patches))
	ec.Status.Phase = etcdv1beta2.ClusterPhaseRunning
	if err := r.statusWriterFor(ec).flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Fatalf("first flush: %d patches, want 1", patches)
	}
	again := stored(t, c)
	w := r.statusWriterFor(again)
	if err := w.checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Fatalf("unchanged status: %d patches in all, want still 1", patches)
	}
	again.Status.Members.Ready = []string{"c-a"}
	if err := w.flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if patches != 2 || len(stored(t, c).Status.Members.Ready) != 1 {
		t.Fatalf("changed status: %d patches, stored %+v; want it written", patches, stored(t, c).Status.Members)
	}
}
