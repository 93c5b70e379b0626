package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// clusterFixture runs the EtcdCluster reconciler against a fake API server and a clock
// the test moves.
type clusterFixture struct {
	c   client.Client
	r   *Reconciler
	rec *record.FakeRecorder
	now time.Time
}

func newClusterFixture(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *clusterFixture {
	t.Helper()
	s := fixture.Scheme()
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&etcdv1beta2.EtcdCluster{})
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	f := &clusterFixture{c: b.Build(), rec: record.NewFakeRecorder(100), now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	f.r = newTestClusterReconciler(t, f.c, f.rec, func() time.Time { return f.now })
	return f
}

func (f *clusterFixture) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	// The metrics registry is global: leave no series behind for other tests.
	t.Cleanup(func() { forgetClusterMetrics("default", name) })
	return fixture.Reconcile(t, f.r, name)
}

func (f *clusterFixture) cluster(t *testing.T, name string) *etcdv1beta2.EtcdCluster {
	t.Helper()
	return fixture.Get[etcdv1beta2.EtcdCluster](t, f.c, name)
}

// events drains the recorded events.
func (f *clusterFixture) events() []string { return drain(f.rec) }

func wantClusterCondition(t *testing.T, c *etcdv1beta2.EtcdCluster, typ etcdv1beta2.ClusterConditionType, status corev1.ConditionStatus, reason string, mentions ...string) {
	t.Helper()
	for _, cond := range c.Status.Conditions {
		if cond.Type != typ {
			continue
		}
		if cond.Status != status || cond.Reason != reason {
			t.Errorf("%s = %s/%s (%s), want %s/%s", typ, cond.Status, cond.Reason, cond.Message, status, reason)
		}
		for _, m := range mentions {
			if !strings.Contains(cond.Message, m) {
				t.Errorf("%s message %q does not mention %q", typ, cond.Message, m)
			}
		}
		return
	}
	t.Errorf("no %s condition in %+v", typ, c.Status.Conditions)
}

func countContaining(list []string, s string) int {
	n := 0
	for _, e := range list {
		if strings.Contains(e, s) {
			n++
		}
	}
	return n
}

func statusCluster(name, version string) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 1, Version: version},
	}
}

// memberPod is a pod the cluster owns, as the chart renders it, with a status.
func memberPod(t *testing.T, c *etcdv1beta2.EtcdCluster, name string, status corev1.PodStatus) *corev1.Pod {
	t.Helper()
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := rd.Render(render.Input{Cluster: c, Members: []render.Member{{Name: name, InitialClusterState: render.StateNew,
		InitialCluster: render.InitialCluster(c, []string{name}, "")}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			yes := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: c.Name, UID: c.UID, Controller: &yes}}
			p.Status = status
			return p
		}
	}
	t.Fatal("no pod rendered")
	return nil
}

func TestReconcileReportsUnschedulablePods(t *testing.T) {
	c := statusCluster("unsched", "3.6.16")
	c.Status.BootstrapMembers = []string{"unsched-a"}
	pod := memberPod(t, c, "unsched-a", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}})
	f := newClusterFixture(t, nil, c, pod)

	f.reconcile(t, c.Name)
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionPodsHealthy, corev1.ConditionFalse, "Unschedulable",
		"unsched-a", "didn't match Pod's node affinity/selector")
	if ev := f.events(); countContaining(ev, "Unschedulable") != 1 {
		t.Errorf("events after the first reconcile: %v, want one Unschedulable warning", ev)
	}
	f.now = f.now.Add(time.Minute)
	f.reconcile(t, c.Name)
	if ev := f.events(); countContaining(ev, "Unschedulable") != 0 {
		t.Errorf("the same failure was reported again: %v", ev)
	}
}

func TestReconcileReportsCrashLoop(t *testing.T) {
	c := statusCluster("crash", "3.6.16")
	c.Status.BootstrapMembers = []string{"crash-a"}
	pod := memberPod(t, c, "crash-a", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.9.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: render.ContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				Message: `{"level":"fatal","msg":"discovery failed","error":"cannot parse flag"}`}}}}})
	f := newClusterFixture(t, nil, c, pod)
	f.reconcile(t, c.Name)
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionPodsHealthy, corev1.ConditionFalse, "CrashLoopBackOff",
		"crash-a", "exit code 1", "cannot parse flag")
}

func TestReconcileReportsMissingOperatorSecret(t *testing.T) {
	c := statusCluster("tlsless", "3.6.16")
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"},
		OperatorSecret: "operator-client"}}
	c.Status.BootstrapMembers = []string{"tlsless-a"}
	pod := memberPod(t, c, "tlsless-a", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.9.2",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: render.ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
	f := newClusterFixture(t, nil, c, pod)

	t.Cleanup(func() { forgetClusterMetrics("default", c.Name) })
	res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	if err != nil {
		t.Fatalf("reconcile returned %v; a reported failure is retried by RequeueAfter", err)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("no retry scheduled: %+v", res)
	}
	got := f.cluster(t, c.Name)
	wantClusterCondition(t, got, etcdv1beta2.ClusterConditionReconciled, corev1.ConditionFalse, etcdv1beta2.ReasonTLSSecretError, "operator-client")
	if ev := f.events(); countContaining(ev, etcdv1beta2.ReasonTLSSecretError) != 1 {
		t.Errorf("events %v, want one %s warning", ev, etcdv1beta2.ReasonTLSSecretError)
	}
	// Repeated failures back off: the second delay is longer than the first.
	res2 := f.reconcile(t, c.Name)
	if res2.RequeueAfter <= res.RequeueAfter {
		t.Errorf("retry delays %v then %v: want a growing delay", res.RequeueAfter, res2.RequeueAfter)
	}
	if ev := f.events(); countContaining(ev, etcdv1beta2.ReasonTLSSecretError) != 0 {
		t.Errorf("the same failure was reported again: %v", ev)
	}
}

func TestReconcileRefusesUnsupportedVersion(t *testing.T) {
	c := statusCluster("old", "3.3.25")
	f := newClusterFixture(t, nil, c)
	f.reconcile(t, c.Name)
	var pods corev1.PodList
	if err := f.c.List(context.Background(), &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created for an unsupported version", len(pods.Items))
	}
	got := f.cluster(t, c.Name)
	wantClusterCondition(t, got, etcdv1beta2.ClusterConditionAvailable, corev1.ConditionFalse, etcdv1beta2.ReasonUnsupportedVersion, "3.3.25", "3.5")
	if got.Status.Reason == "" || !strings.Contains(got.Status.Reason, "3.3.25") {
		t.Errorf("status.reason %q does not name the version", got.Status.Reason)
	}
	if ev := f.events(); countContaining(ev, etcdv1beta2.ReasonUnsupportedVersion) != 1 {
		t.Errorf("events %v, want one %s warning", ev, etcdv1beta2.ReasonUnsupportedVersion)
	}

	// Raising the version lets the cluster be created.
	got.Spec.Version = "3.6.16"
	got.Generation++
	if err := f.c.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, c.Name)
	if err := f.c.List(context.Background(), &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Errorf("%d pods after the version was fixed, want 1", len(pods.Items))
	}
}

func TestReconcileBacksOffAFailingStep(t *testing.T) {
	creates := 0
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("exceeded quota: pods"))
	funcs := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			creates++
			return quota
		}
		return c.Create(ctx, obj, opts...)
	}}
	c := statusCluster("quota", "3.6.16")
	f := newClusterFixture(t, funcs, c)

	first := f.reconcile(t, c.Name)
	if creates != 1 {
		t.Fatalf("%d pod creations, want 1", creates)
	}
	wantClusterCondition(t, f.cluster(t, c.Name), etcdv1beta2.ClusterConditionReconciled, corev1.ConditionFalse, etcdv1beta2.ReasonActionFailed, "exceeded quota")
	// Woken again at once (a pod or status event): the failed step is not retried yet.
	f.now = f.now.Add(first.RequeueAfter / 2)
	again := f.reconcile(t, c.Name)
	if creates != 1 {
		t.Errorf("the failed step was retried %v after it failed, within its back-off of %v", first.RequeueAfter/2, first.RequeueAfter)
	}
	if again.RequeueAfter <= 0 || again.RequeueAfter > first.RequeueAfter {
		t.Errorf("requeue %v while backing off, want the rest of %v", again.RequeueAfter, first.RequeueAfter)
	}
	// Due: retried, and the next delay is longer.
	f.now = f.now.Add(first.RequeueAfter)
	second := f.reconcile(t, c.Name)
	if creates != 2 {
		t.Errorf("%d pod creations once the back-off passed, want 2", creates)
	}
	if second.RequeueAfter <= first.RequeueAfter {
		t.Errorf("delays %v then %v, want growing", first.RequeueAfter, second.RequeueAfter)
	}
	// A spec change is a new attempt at once.
	cl := f.cluster(t, c.Name)
	cl.Generation++
	if err := f.c.Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, c.Name)
	if creates != 3 {
		t.Errorf("%d pod creations after a spec change, want 3", creates)
	}
}
