package etcdrestore

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// A restored cluster whose members cannot start (here: the backup's claim does not
// exist, so the scheduler cannot place them) is reported on the EtcdRestore too, in the
// scheduler's words, instead of "waiting" with no reason.
func TestRestoreReportsMembersThatCannotStart(t *testing.T) {
	f := newRestoreFixture(t, fixture.PVCRestore("nopvc", "np", "missing-claim", "snaps/one.db"))
	f.reconcile(t, "nopvc")
	f.wantCondition(t, "nopvc", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting")

	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "np"}, &c); err != nil {
		t.Fatal(err)
	}
	const why = `np-a: Unschedulable: 0/3 nodes are available: persistentvolumeclaim "missing-claim" not found.`
	c.Status.Conditions = []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionPodsHealthy, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: why}}
	if err := f.c.Status().Update(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "nopvc")
	f.wantCondition(t, "nopvc", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, why)
}

// A cluster the API server refuses to create (its admission rules are stricter than what
// the restore checks itself, e.g. a size above the maximum in the spec annotation) ends
// the restore with the API server's reason, instead of an error in the operator's log
// retried forever.
func TestRestoreReportsClusterRefusedByTheAPIServer(t *testing.T) {
	s := fixture.Scheme()
	er := fixture.PVCRestore("huge", "h", "backups", "snaps/one.db")
	er.Annotations = map[string]string{RestoreClusterSpecAnnotation: `{"size": 200}`}
	refused := apierrors.NewInvalid(schema.GroupKind{Group: etcdv1beta2.GroupVersion.Group, Kind: "EtcdCluster"}, "h",
		field.ErrorList{field.Invalid(field.NewPath("spec", "size"), 200, "should be less than or equal to 99")})
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(er).WithStatusSubresource(&etcdv1beta2.EtcdRestore{}, &etcdv1beta2.EtcdCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*etcdv1beta2.EtcdCluster); ok {
				return refused
			}
			return cl.Create(ctx, obj, opts...)
		}}).Build()
	f := &restoreFixture{c: c, rec: record.NewFakeRecorder(100), r: &Reconciler{Client: c, APIReader: c, OperatorImage: "op:test", S3Access: testS3Access, Hasher: &snapshotcheck.Hasher{Await: true}, PinKey: testPinKey, lookups: lookups{await: true}}}
	f.r.Recorder = f.rec
	f.reconcile(t, "huge")
	f.wantCondition(t, "huge", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "spec.size")
}

// The status is written once per reconcile, after every other write of the reconcile
// (the annotations it records keep what it reports), and not at all when nothing changed.
func TestRestoreStatusWrittenOnceLast(t *testing.T) {
	s := fixture.Scheme()
	er := fixture.PVCRestore("once", "o", "backups", "snaps/one.db")
	var calls []string
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(er).WithStatusSubresource(&etcdv1beta2.EtcdRestore{}, &etcdv1beta2.EtcdCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				calls = append(calls, "create")
				return assignUID(ctx, cl, obj, opts...)
			},
			Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				calls = append(calls, "patch")
				return cl.Patch(ctx, obj, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				calls = append(calls, sub+" patch")
				return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	f := &restoreFixture{c: c, rec: record.NewFakeRecorder(100), r: &Reconciler{Client: c, APIReader: c, OperatorImage: "op:test", S3Access: testS3Access, Hasher: &snapshotcheck.Hasher{Await: true}, PinKey: testPinKey, lookups: lookups{await: true}}}
	f.r.Recorder = f.rec

	f.reconcileOnce(t, "once")
	if want := []string{"create", "patch", "status patch"}; !slices.Equal(calls, want) {
		t.Errorf("writes %v, want %v: the cluster, the restore's record of it, then its status once", calls, want)
	}
	er2 := f.wantCondition(t, "once", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting for it to become Available")
	if er2.Annotations[restoreorigin.CreatedClusterAnnotation] == "" {
		t.Errorf("the record of the created cluster was lost: %v", er2.Annotations)
	}
	// Following the cluster: one write for the new message, then none while it holds.
	calls = nil
	f.reconcileOnce(t, "once")
	if want := []string{"status patch"}; !slices.Equal(calls, want) {
		t.Errorf("following the cluster wrote %v, want %v", calls, want)
	}
	calls = nil
	f.reconcileOnce(t, "once")
	if len(calls) != 0 {
		t.Errorf("a reconcile that changed nothing wrote %v", calls)
	}
}

// What a step reports survives a later annotation write in the same reconcile, and the
// one status write at the end carries it (a patch of the restore itself answers with the
// stored status, which would otherwise replace it).
func TestRestoreStatusSurvivesAnnotationWrites(t *testing.T) {
	er := fixture.PVCRestore("keep", "k", "backups", "snaps/one.db")
	f := newRestoreFixture(t, er)
	ctx := context.Background()
	got := f.restore(t, "keep")
	before := got.Status.DeepCopy()
	f.r.setStatus(got, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "step one")
	if err := f.r.setAnnotation(ctx, got, "example.com/x", "y"); err != nil {
		t.Fatal(err)
	}
	if err := f.r.flushStatus(ctx, got, before); err != nil {
		t.Fatal(err)
	}
	stored := f.wantCondition(t, "keep", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "step one")
	if stored.Annotations["example.com/x"] != "y" {
		t.Errorf("annotation not written: %v", stored.Annotations)
	}
}
