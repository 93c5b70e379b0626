package etcdcluster

import (
	"context"
	"strings"
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

// specFixture is a fake API server holding a cluster whose spec the reconciler must
// refuse (stored before admission refused it), and the reconciler on it.
type specFixture struct {
	ctx context.Context
	c   client.Client
	rec *record.FakeRecorder
	r   *Reconciler
	key client.ObjectKey
}

func newSpecFixture(t *testing.T, cluster *etcdv1beta2.EtcdCluster, objs ...client.Object) *specFixture {
	t.Helper()
	s := fixture.Scheme()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{cluster}, objs...)...).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).Build()
	rec := record.NewFakeRecorder(10)
	r := newTestReconciler(t, Reconciler{Client: c, Scheme: s, Recorder: rec, Now: time.Now})
	return &specFixture{ctx: context.Background(), c: c, rec: rec, r: r, key: client.ObjectKeyFromObject(cluster)}
}

// reconcile reconciles the cluster once and returns it as stored afterwards.
func (f *specFixture) reconcile(t *testing.T) etcdv1beta2.EtcdCluster {
	t.Helper()
	if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: f.key}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	var got etcdv1beta2.EtcdCluster
	if err := f.c.Get(f.ctx, f.key, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReconcileRefusesIdentityEnv: a cluster stored before the CRD refused such
// variables (e.g. a CoreOS CR) and asking for ETCD_FORCE_NEW_CLUSTER is reported as
// InvalidSpec naming the variable, with a warning event, and nothing is created,
// changed or deleted.
func TestReconcileRefusesIdentityEnv(t *testing.T) {
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default", UID: "uid-old"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", Pod: &etcdv1beta2.PodPolicy{
			EtcdEnv: []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}, {Name: "ETCD_FORCE_NEW_CLUSTER", Value: "true"}}}},
	}
	member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old-0000", Namespace: "default",
		Labels: map[string]string{"app": "etcd", "etcd_cluster": "old"}}}
	f := newSpecFixture(t, cluster, member)
	ctx, c := f.ctx, f.c
	var before corev1.PodList
	if err := c.List(ctx, &before); err != nil {
		t.Fatal(err)
	}

	got := f.reconcile(t)
	if !strings.Contains(got.Status.Reason, "spec.pod.etcdEnv: ETCD_FORCE_NEW_CLUSTER") {
		t.Errorf("status.reason %q does not name spec.pod.etcdEnv and the variable", got.Status.Reason)
	}
	found := false
	for _, cond := range got.Status.Conditions {
		found = found || (cond.Reason == etcdv1beta2.ReasonInvalidSpec && strings.Contains(cond.Message, "ETCD_FORCE_NEW_CLUSTER"))
	}
	if !found {
		t.Errorf("no %s condition naming the variable: %+v", etcdv1beta2.ReasonInvalidSpec, got.Status.Conditions)
	}
	select {
	case e := <-f.rec.Events:
		if !strings.Contains(e, "Warning "+etcdv1beta2.ReasonInvalidSpec) || !strings.Contains(e, "ETCD_FORCE_NEW_CLUSTER") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event")
	}
	pods, services := podsAndServices(ctx, t, c)
	if len(pods.Items) != 1 || pods.Items[0].ResourceVersion != before.Items[0].ResourceVersion || len(services.Items) != 0 {
		t.Errorf("objects touched: pods %d (rv %s → %s), services %d", len(pods.Items),
			before.Items[0].ResourceVersion, pods.Items[0].ResourceVersion, len(services.Items))
	}
}

// TestReconcileRefusesInvalidSettings: a v1beta2 annotation holding an etcd setting that
// etcd would not take (v1 refuses the same at admission) is reported as InvalidSpec
// naming the annotation, and nothing is created.
func TestReconcileRefusesInvalidSettings(t *testing.T) {
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "default", UID: "uid-quota",
			Annotations: map[string]string{etcdv1beta2.QuotaBackendBytesAnnotation: "2Gi"}},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16"},
	}
	f := newSpecFixture(t, cluster)
	got := f.reconcile(t)
	if got.Status.Phase != etcdv1beta2.ClusterPhaseFailed || !strings.Contains(got.Status.Reason, etcdv1beta2.QuotaBackendBytesAnnotation) {
		t.Errorf("status %q %q: want Failed naming the annotation", got.Status.Phase, got.Status.Reason)
	}
	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods %d, %v", len(pods.Items), err)
	}
}

// podsAndServices lists every pod and Service c serves: what a refused spec must not
// have created or changed.
func podsAndServices(ctx context.Context, t *testing.T, c client.Client) (corev1.PodList, corev1.ServiceList) {
	t.Helper()
	var pods corev1.PodList
	var services corev1.ServiceList
	listAll(ctx, t, c, &pods, &services)
	return pods, services
}

// listAll fills each of lists with everything of its kind c serves.
func listAll(ctx context.Context, t *testing.T, c client.Client, lists ...client.ObjectList) {
	t.Helper()
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}
