package etcdcluster

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

var proofNow = time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)

// proofFixture is an EtcdCluster "c" in namespace "ns" with a fake API server behind
// the cluster reconciler; deletes are recorded with their options.
type proofFixture struct {
	c       client.Client
	r       *Reconciler
	rec     *record.FakeRecorder
	cluster *etcdv1beta2.EtcdCluster
	deletes []deleteCall
}

type deleteCall struct {
	name string
	kind string
	uid  types.UID // the UID precondition sent, if any
}

func newProofFixture(t *testing.T, mutate func(*etcdv1beta2.EtcdCluster), objs ...client.Object) *proofFixture {
	t.Helper()
	return newProofFixtureWith(t, interceptor.Funcs{}, mutate, objs...)
}

// newProofFixtureWith is newProofFixture with further interceptors on the fake API
// server; deletes are recorded unless funcs intercepts them itself.
func newProofFixtureWith(t *testing.T, funcs interceptor.Funcs, mutate func(*etcdv1beta2.EtcdCluster), objs ...client.Object) *proofFixture {
	t.Helper()
	s := fixture.Scheme()
	ec := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-c", Generation: 1},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"},
	}
	if mutate != nil {
		mutate(ec)
	}
	f := &proofFixture{cluster: ec}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{ec}, objs...)...).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).
		WithInterceptorFuncs(withRecordedDeletes(withUIDs(funcs), func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			call := deleteCall{name: obj.GetName(), kind: strings.TrimPrefix(strings.ToLower(typeName(obj)), "*v1.")}
			if do.Preconditions != nil && do.Preconditions.UID != nil {
				call.uid = *do.Preconditions.UID
				// The fake client checks only resourceVersion preconditions; do what the
				// API server does with a UID one.
				cur := obj.DeepCopyObject().(client.Object)
				if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), cur); err == nil && cur.GetUID() != call.uid {
					f.deletes = append(f.deletes, call)
					return errConflictForTest
				}
			}
			f.deletes = append(f.deletes, call)
			return cl.Delete(ctx, obj, opts...)
		})).Build()
	f.c, f.rec = c, record.NewFakeRecorder(200)
	f.r = newTestClusterReconciler(t, c, f.rec, func() time.Time { return proofNow })
	// A total-loss observation or choice reads the backup listing it starts (production
	// uses it at a later reconcile; TestTotalLossListingLeavesTheWorker checks that).
	f.r.lostBackups.awaitListings = true
	// Likewise the operator's own read of a checked candidate (TestHashLeavesTheWorker).
	f.r.Hasher = &snapshotcheck.Hasher{Await: true}
	// Read back what the fake server stored (UIDs, resourceVersions).
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ec), f.cluster); err != nil {
		t.Fatal(err)
	}
	return f
}

// withUIDs gives each created object a UID, as the API server does (the fake client
// does not), before funcs' own Create, if any, sees it.
func withUIDs(funcs interceptor.Funcs) interceptor.Funcs {
	next := funcs.Create
	funcs.Create = func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetName() + "-" + strconv.Itoa(int(uidSeq.Add(1)))))
		}
		if next != nil {
			return next(ctx, cl, obj, opts...)
		}
		return cl.Create(ctx, obj, opts...)
	}
	return funcs
}

var uidSeq atomic.Int64

func withRecordedDeletes(funcs interceptor.Funcs, del func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error) interceptor.Funcs {
	if funcs.Delete == nil {
		funcs.Delete = del
	}
	return funcs
}

var errConflictForTest = &conflictError{}

type conflictError struct{}

func (*conflictError) Error() string {
	return "precondition failed: UID in precondition does not match"
}

func typeName(o client.Object) string {
	switch o.(type) {
	case *corev1.Pod:
		return "*v1.pod"
	case *corev1.PersistentVolumeClaim:
		return "*v1.pvc"
	}
	return "other"
}

// memberPod is a pod named name with the cluster's member labels; owner "" means
// no owner, otherwise a controller reference to an EtcdCluster with that UID.
func ownedMemberPod(name string, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		Labels: render.MemberLabels("c", name), CreationTimestamp: metav1.NewTime(proofNow.Add(-time.Hour))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerName, Image: "quay.io/coreos/etcd:v3.7.3"}}}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{controllerRef(owner)}
	}
	return p
}

func memberClaim(name string, owner types.UID) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-pvc-" + name),
		Labels: render.MemberLabels("c", name)}}
	if owner != "" {
		pvc.OwnerReferences = []metav1.OwnerReference{controllerRef(owner)}
	}
	return pvc
}

func controllerRef(uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: "c", UID: uid, Controller: &yes}
}

func (f *proofFixture) exists(t *testing.T, obj client.Object, name string) bool {
	t.Helper()
	err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, obj)
	if err != nil && client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

// observed is an observation of the fixture's pods as the cache would show them.
func (f *proofFixture) observed(t *testing.T, names ...string) *observation {
	t.Helper()
	o := &observation{pods: map[string]*corev1.Pod{}, status: f.r.statusWriterFor(f.cluster)}
	for _, n := range names {
		var p corev1.Pod
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: n}, &p); err != nil {
			t.Fatal(err)
		}
		o.pods[n] = &p
	}
	return o
}

func (f *proofFixture) warned(t *testing.T, sub string) {
	t.Helper()
	for {
		select {
		case e := <-f.rec.Events:
			if strings.HasPrefix(e, corev1.EventTypeWarning) && strings.Contains(e, sub) {
				return
			}
		default:
			t.Fatalf("no warning event mentioning %q", sub)
		}
	}
}

func TestActDeletesOnlyWhatTheClusterControls(t *testing.T) {
	ctx := context.Background()
	t.Run("a pod of the member's name that the cluster does not control is left alone", func(t *testing.T) {
		for _, owner := range []types.UID{"", "uid-other-cluster"} {
			f := newProofFixture(t, nil, ownedMemberPod("c-stranger", owner), memberClaim("c-stranger", owner))
			o := f.observed(t)
			for _, a := range []planner.Action{
				{Kind: planner.DeletePod, Name: "c-stranger", Reason: "OrphanPod"},
				{Kind: planner.DeletePod, Name: "c-stranger", KeepClaim: true, Reason: "RecreatingPod"},
			} {
				_, err := f.r.act(ctx, f.cluster, o, a)
				if err == nil || !strings.Contains(err.Error(), "not controlled by") {
					t.Errorf("owner %q, %v: err %v, want a refusal", owner, a, err)
				}
				if !f.exists(t, &corev1.Pod{}, "c-stranger") || !f.exists(t, &corev1.PersistentVolumeClaim{}, "c-stranger") {
					t.Fatalf("owner %q, %v deleted an object the cluster does not control", owner, a)
				}
			}
			f.warned(t, "not controlled by")
		}
	})
	t.Run("a claim the cluster does not control survives its member's removal", func(t *testing.T) {
		f := newProofFixture(t, nil, ownedMemberPod("c-m1", "uid-c"), memberClaim("c-m1", ""))
		_, err := f.r.act(ctx, f.cluster, f.observed(t, "c-m1"), planner.Action{Kind: planner.DeletePod, Name: "c-m1", Reason: "OrphanPod"})
		if err == nil {
			t.Error("a foreign claim was skipped silently")
		}
		if f.exists(t, &corev1.Pod{}, "c-m1") {
			t.Error("the cluster's own pod was not deleted")
		}
		if !f.exists(t, &corev1.PersistentVolumeClaim{}, "c-m1") {
			t.Fatal("a claim the cluster does not control was deleted")
		}
		f.warned(t, "not controlled by")
	})
	t.Run("deletes carry the UID read at the moment of deletion", func(t *testing.T) {
		f := newProofFixture(t, nil, ownedMemberPod("c-m1", "uid-c"), memberClaim("c-m1", "uid-c"))
		if _, err := f.r.act(ctx, f.cluster, f.observed(t, "c-m1"), planner.Action{Kind: planner.DeletePod, Name: "c-m1"}); err != nil {
			t.Fatal(err)
		}
		want := map[string]types.UID{"pod/c-m1": "uid-c-m1", "pvc/c-m1": "uid-pvc-c-m1"}
		for _, d := range f.deletes {
			key := d.kind + "/" + d.name
			if d.uid != want[key] {
				t.Errorf("delete %s with UID precondition %q, want %q", key, d.uid, want[key])
			}
			delete(want, key)
		}
		if len(want) != 0 {
			t.Errorf("not deleted: %v", want)
		}
	})
	t.Run("a pod recreated under the same name since it was observed is not deleted", func(t *testing.T) {
		f := newProofFixture(t, nil, ownedMemberPod("c-m1", "uid-c"))
		o := f.observed(t, "c-m1")
		o.pods["c-m1"].UID = "uid-of-the-pod-that-was-planned-on"
		_, err := f.r.act(ctx, f.cluster, o, planner.Action{Kind: planner.DeletePod, Name: "c-m1"})
		if err == nil || !f.exists(t, &corev1.Pod{}, "c-m1") {
			t.Fatalf("err %v; the pod now under that name must stay", err)
		}
	})
	t.Run("an aborted recovery whose recorded member is a pod the cluster does not control", func(t *testing.T) {
		f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
			c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Member: "c-stranger", Source: "c-m1", Token: "t"}
		}, ownedMemberPod("c-stranger", ""))
		_, _ = f.r.act(ctx, f.cluster, f.observed(t), planner.Action{Kind: planner.AbortRecovery, Name: "c-stranger", DeletePod: true})
		if !f.exists(t, &corev1.Pod{}, "c-stranger") {
			t.Fatal("deleted a pod the cluster does not control")
		}
	})
}

// reconcileOnce runs one full reconcile of cluster c.
func (f *proofFixture) reconcileOnce(t *testing.T) {
	t.Helper()
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

func (f *proofFixture) podNames(t *testing.T) []string {
	t.Helper()
	var pods corev1.PodList
	if err := f.c.List(context.Background(), &pods, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

// TestForgedStatusDeletesNothing: status is a subresource a tenant may be able to
// write; what it records must never make the operator delete a pod or start a new
// cluster beside the one that exists.
func TestForgedStatusDeletesNothing(t *testing.T) {
	members := func() []client.Object {
		var objs []client.Object
		for _, n := range []string{"c-aaaaaaa1", "c-aaaaaaa2", "c-aaaaaaa3"} {
			p := ownedMemberPod(n, "uid-c")
			// Addressable, but etcd is not running: nothing is dialled, no member answers.
			p.Status.PodIP = "127.250.0." + n[len(n)-1:]
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
			objs = append(objs, p)
		}
		return objs
	}
	cases := []struct {
		name   string
		forge  func(*etcdv1beta2.EtcdCluster)
		rounds int
	}{
		{"a recovery naming a healthy member's pod, without the opt-in", func(c *etcdv1beta2.EtcdCluster) {
			c.Status.Bootstrapped = true
			c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Source: "c-aaaaaaa1", SourceID: "1", Member: "c-aaaaaaa2", Token: "t", StartedAt: metav1.NewTime(proofNow.Add(-time.Hour))}
		}, 2},
		{"a recovery of a cluster that never lost its quorum, with the opt-in", func(c *etcdv1beta2.EtcdCluster) {
			c.Annotations = map[string]string{AnnotationForceNewCluster: "true"}
			c.Status.Bootstrapped = true
			c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Source: "c-aaaaaaa1", SourceID: "1", Member: "c-forked00", Token: "t", StartedAt: metav1.NewTime(proofNow)}
		}, 2},
		{"bootstrap members other than the pods that exist", func(c *etcdv1beta2.EtcdCluster) {
			c.Status.Bootstrapped = false
			c.Status.BootstrapMembers = []string{"c-xxxxxxx1", "c-xxxxxxx2", "c-xxxxxxx3"}
		}, 2},
		{"a formed cluster marked not bootstrapped, with its members' names plus one", func(c *etcdv1beta2.EtcdCluster) {
			c.Status.Bootstrapped = false
			c.Status.BootstrapMembers = []string{"c-aaaaaaa1", "c-aaaaaaa2", "c-aaaaaaa3", "c-xxxxxxx4"}
		}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
				tc.forge(c)
			}, members()...)
			// The status subresource is written separately from the object.
			forged := f.cluster.DeepCopy()
			tc.forge(forged)
			if err := f.c.Status().Update(context.Background(), forged); err != nil {
				t.Fatal(err)
			}
			before := strings.Join(f.podNames(t), ",")
			for i := 0; i < tc.rounds; i++ {
				f.reconcileOnce(t)
			}
			if after := strings.Join(f.podNames(t), ","); after != before {
				t.Fatalf("pods %s became %s", before, after)
			}
			for _, d := range f.deletes {
				t.Errorf("deleted %s %s", d.kind, d.name)
			}
		})
	}
}

// stuckBootstrapFixture is a cluster whose three bootstrap members' pods were created on
// etcd 3.6.99, an image that does not exist: recorded as the initial cluster, none
// started.
func stuckBootstrapFixture(t *testing.T) (*proofFixture, []string) {
	t.Helper()
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
	return f, names
}

// TestStuckBootstrapFollowsCorrectedVersion: pods of a bootstrap created on a version
// that does not exist get the corrected image in place, one per reconcile, and keep
// their names.
func TestStuckBootstrapFollowsCorrectedVersion(t *testing.T) {
	f, names := stuckBootstrapFixture(t)
	for range names {
		f.reconcileOnce(t)
	}
	for _, n := range names {
		var p corev1.Pod
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: n}, &p); err != nil {
			t.Fatal(err)
		}
		if img := p.Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v3.7.3" || p.Annotations[render.AnnotationVersion] != "3.7.3" {
			t.Errorf("pod %s: image %s, version %s; want the spec's 3.7.3", n, img, p.Annotations[render.AnnotationVersion])
		}
	}
	if len(f.deletes) != 0 {
		t.Errorf("deleted %v", f.deletes)
	}
}
