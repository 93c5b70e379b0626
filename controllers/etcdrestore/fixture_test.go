package etcdrestore

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// restoreFixture is the restore reconciler over a fake API server (UIDs assigned on
// create) with a fake event recorder.
type restoreFixture struct {
	c   client.Client
	r   *Reconciler
	rec *record.FakeRecorder
}

func newRestoreFixture(t *testing.T, objs ...client.Object) *restoreFixture {
	t.Helper()
	s := fixture.Scheme()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&etcdv1beta2.EtcdRestore{}, &etcdv1beta2.EtcdCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: assignUID}).Build()
	rec := record.NewFakeRecorder(100)
	return &restoreFixture{c: c, rec: rec, r: &Reconciler{Client: c, APIReader: c, Recorder: rec, OperatorImage: "op:test", S3Access: testS3Access, Hasher: &snapshotcheck.Hasher{Await: true}, PinKey: testPinKey, lookups: lookups{await: true}}}
}

// reconcile reconciles the restore, playing the kubelet for any snapshot check pod the
// reconcile starts (runCheckPods) and reconciling again until none is left to run.
func (f *restoreFixture) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	for range 5 {
		res := f.reconcileOnce(t, name)
		if f.runCheckPods(t) == 0 {
			return res
		}
	}
	t.Fatalf("reconcile %s: check pods keep being started", name)
	return ctrl.Result{}
}

func (f *restoreFixture) reconcileOnce(t *testing.T, name string) ctrl.Result {
	t.Helper()
	return fixture.Reconcile(t, f.r, name)
}

func (f *restoreFixture) restore(t *testing.T, name string) *etcdv1beta2.EtcdRestore {
	t.Helper()
	return fixture.Get[etcdv1beta2.EtcdRestore](t, f.c, name)
}

func (f *restoreFixture) wantCondition(t *testing.T, name string, status metav1.ConditionStatus, reason, mention string) *etcdv1beta2.EtcdRestore {
	t.Helper()
	er := f.restore(t, name)
	c := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, mention) {
		t.Fatalf("%s: condition %+v, want %s/%s mentioning %q", name, c, status, reason, mention)
	}
	if er.Status.Succeeded != (status == metav1.ConditionTrue) {
		t.Errorf("%s: succeeded=%v with condition %s", name, er.Status.Succeeded, status)
	}
	if status == metav1.ConditionFalse && er.Status.Reason != c.Message {
		t.Errorf("%s: status.reason %q, want the condition message", name, er.Status.Reason)
	}
	return er
}

func (f *restoreFixture) clusters(t *testing.T) []etcdv1beta2.EtcdCluster {
	t.Helper()
	var l etcdv1beta2.EtcdClusterList
	if err := f.c.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// assignUID gives a created object a UID, as the API server does (the fake client
// leaves it empty): a restore records the UID of the cluster it created.
func assignUID(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	if obj.GetUID() == "" {
		obj.SetUID(uuid.NewUUID())
	}
	return c.Create(ctx, obj, opts...)
}

// testPinKey signs the replaced-cluster records of the fixture's reconciler.
var testPinKey = []byte("restore test key, 32 bytes long!")
