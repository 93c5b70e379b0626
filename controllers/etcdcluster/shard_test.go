package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

const testShardKey = "etcd.database.coreos.com/shard"

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		dflt       bool
		want       Shard
	}{
		{"", "", false, Shard{}},
		{testShardKey, "2", false, Shard{Key: testShardKey, Value: "2"}},
		{"shard", "eu-west-1", true, Shard{Key: "shard", Value: "eu-west-1", Default: true}},
	} {
		got, err := ParseShard(tc.key, tc.value, tc.dflt)
		if err != nil || got != tc.want {
			t.Errorf("ParseShard(%q, %q, %v) = %+v, %v; want %+v", tc.key, tc.value, tc.dflt, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		key, value string
		dflt       bool
		says       string
	}{
		{"", "2", false, "--shard-key"},
		{"", "", true, "--shard-key"},
		{testShardKey, "", false, "needs --shard"},
		{"bad key!", "2", false, "--shard-key"},
		{testShardKey, "Shard_2", false, "--shard \"Shard_2\""}, // names a Lease: a DNS label
		{testShardKey, strings.Repeat("a", 64), false, "--shard"},
	} {
		if _, err := ParseShard(bad.key, bad.value, bad.dflt); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("ParseShard(%q, %q, %v) = %v; want an error naming %s", bad.key, bad.value, bad.dflt, err, bad.says)
		}
	}
}

func TestShardManages(t *testing.T) {
	two := Shard{Key: testShardKey, Value: "2"}
	twoDefault := Shard{Key: testShardKey, Value: "2", Default: true}
	l := func(v string) map[string]string { return map[string]string{testShardKey: v} }
	for _, tc := range []struct {
		what        string
		shard       Shard
		labels, ann map[string]string
		want        bool
	}{
		{"unsharded: every cluster", Shard{}, l("7"), nil, true},
		{"label of this shard", two, l("2"), nil, true},
		{"label of another shard", two, l("3"), nil, false},
		{"annotation of this shard", two, nil, l("2"), true},
		{"annotation of another shard", two, nil, l("3"), false},
		{"the label wins over the annotation", two, l("3"), l("2"), false},
		{"the label wins over the annotation (2)", two, l("2"), l("3"), true},
		{"no key: nobody's but the default's", two, nil, nil, false},
		{"no key: the default shard's", twoDefault, map[string]string{"app": "x"}, nil, true},
		{"the default shard keeps to its value otherwise", twoDefault, l("3"), nil, false},
		{"an empty value is a value, not no key", twoDefault, l(""), nil, false},
	} {
		if got := tc.shard.Manages(tc.labels, tc.ann); got != tc.want {
			t.Errorf("%s: Manages = %v, want %v", tc.what, got, tc.want)
		}
	}
}

func TestShardLeaseID(t *testing.T) {
	const base = "etcd-operator.etcd.database.coreos.com"
	if got := (Shard{}).LeaseID(base); got != base {
		t.Errorf("unsharded Lease %q, want %q", got, base)
	}
	a, b := Shard{Key: testShardKey, Value: "1"}.LeaseID(base), Shard{Key: testShardKey, Value: "2"}.LeaseID(base)
	if a == b || a == base || !strings.HasSuffix(a, base) {
		t.Errorf("shard Leases %q and %q: want distinct, and apart from the unsharded %q", a, b, base)
	}
	// An unsharded instance rolled to the default shard's (or the default renamed) must
	// hand over through the Lease it held, or the old and new pods both lead for a while.
	for _, v := range []string{"1", "main"} {
		if got := (Shard{Key: testShardKey, Value: v, Default: true}).LeaseID(base); got != base {
			t.Errorf("default shard %q elects on %q; want the unsharded %q", v, got, base)
		}
	}
}

// TestManagedPredicate: an instance sees the events of its own clusters, and the update
// that moves one of its clusters away (so it can release it), but nothing of a cluster
// that is and stays another shard's.
func TestManagedPredicate(t *testing.T) {
	r := &Reconciler{Shard: Shard{Key: testShardKey, Value: "1"}}
	p := r.managedPredicate()
	in := func(v string) *etcdv1beta2.EtcdCluster {
		return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{testShardKey: v}}}
	}
	if !p.Create(event.CreateEvent{Object: in("1")}) || p.Create(event.CreateEvent{Object: in("2")}) {
		t.Error("create events: want this shard's only")
	}
	if !p.Delete(event.DeleteEvent{Object: in("1")}) || p.Delete(event.DeleteEvent{Object: in("2")}) {
		t.Error("delete events: want this shard's only")
	}
	for _, tc := range []struct {
		from, to string
		want     bool
	}{{"1", "1", true}, {"1", "2", true}, {"2", "1", true}, {"2", "3", false}} {
		if got := p.Update(event.UpdateEvent{ObjectOld: in(tc.from), ObjectNew: in(tc.to)}); got != tc.want {
			t.Errorf("update from shard %s to %s: passed %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// shardCluster is a one-member cluster with meta's name and UID in namespace default,
// labelled for shard.
func shardCluster(meta metav1.ObjectMeta, shard string) *etcdv1beta2.EtcdCluster {
	meta.Namespace, meta.Labels = "default", map[string]string{testShardKey: shard}
	return &etcdv1beta2.EtcdCluster{ObjectMeta: meta, Spec: etcdv1beta2.EtcdClusterSpec{Size: 1, Version: "3.6.16"}}
}

// wantNoPodsNorStatus fails t if c holds a member pod or cl has a status written: what
// an instance must not do for a cluster moved away (when says when it moved).
func wantNoPodsNorStatus(ctx context.Context, t *testing.T, c client.Client, cl *etcdv1beta2.EtcdCluster, when string) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d member pods created for a cluster moved away%s", len(pods.Items), when)
	}
	var got etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(cl), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "" || len(got.Status.Conditions) > 0 {
		t.Errorf("status written for a cluster moved away: %+v", got.Status)
	}
}

// TestReconcileReleasesAMovedCluster: shard 1's instance bootstraps its cluster; once
// the cluster is labelled for shard 2, a reconcile on shard 1 changes nothing (no pod
// deleted or created, no status written, no event) and forgets what it kept of it.
func TestReconcileReleasesAMovedCluster(t *testing.T) {
	s := fixture.Scheme()
	cl := shardCluster(metav1.ObjectMeta{Name: "db", UID: "uid-db"}, "1")
	other := shardCluster(metav1.ObjectMeta{Name: "theirs", UID: "uid-theirs"}, "2")
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cl, other).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).Build()
	rec := record.NewFakeRecorder(100)
	r := newTestClusterReconciler(t, c, rec, time.Now)
	r.Shard = Shard{Key: testShardKey, Value: "1"}
	ctx := context.Background()
	reconcile := func(o client.Object) {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)}); err != nil {
			t.Fatalf("reconcile %s: %v", o.GetName(), err)
		}
	}
	pods := func() map[string]string {
		t.Helper()
		var l corev1.PodList
		if err := c.List(ctx, &l); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range l.Items {
			out[p.Name] = p.ResourceVersion
		}
		return out
	}

	reconcile(cl)
	reconcile(other)
	before := pods()
	if len(before) != 1 {
		t.Fatalf("pods after bootstrapping shard 1's cluster only: %v; want one", before)
	}
	var theirs etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), &theirs); err != nil {
		t.Fatal(err)
	}
	if theirs.Status.Phase != "" || len(theirs.Status.Conditions) > 0 {
		t.Errorf("status of shard 2's cluster written by shard 1: %+v", theirs.Status)
	}
	key := client.ObjectKeyFromObject(cl).String()
	if !r.keepsAnything(key) {
		t.Fatal("nothing kept of the managed cluster after a reconcile: the release below would prove nothing")
	}

	var moved etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(cl), &moved); err != nil {
		t.Fatal(err)
	}
	moved.Labels[testShardKey] = "2"
	moved.Spec.Size = 3 // shard 2's to do now
	if err := c.Update(ctx, &moved); err != nil {
		t.Fatal(err)
	}
	fixture.DrainEvents(rec)
	reconcile(&moved)

	if after := pods(); len(after) != len(before) || after[firstKey(before)] != before[firstKey(before)] {
		t.Errorf("pods after the move: %v; want them untouched: %v", after, before)
	}
	var got etcdv1beta2.EtcdCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(cl), &got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != moved.ResourceVersion {
		t.Errorf("the released cluster was written (resourceVersion %s -> %s): status %+v", moved.ResourceVersion, got.ResourceVersion, got.Status)
	}
	if evs := fixture.DrainEvents(rec); len(evs) > 0 {
		t.Errorf("events about a released cluster: %v", evs)
	}
	if r.keepsAnything(key) {
		t.Error("the released cluster's memory was kept")
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// keepsAnything reports whether the reconciler's memory holds something of cluster key
// that a reconcile of a cluster still waiting for its first member leaves there.
func (r *Reconciler) keepsAnything(key string) bool {
	r.health.mu.Lock()
	defer r.health.mu.Unlock()
	_, ok := r.health.since[key]
	return ok
}

// TestReconcileWritesNothingForAClusterMovedBeforeItsFirstWrite: a cluster relabelled
// for another shard right after the reconcile read it (the cache lagging the move) gets
// nothing from this instance: no Services, budget or pods, no status. The instance it
// joined writes those now; two instances writing them would fight over their settings.
func TestReconcileWritesNothingForAClusterMovedBeforeItsFirstWrite(t *testing.T) {
	s := fixture.Scheme()
	cl := shardCluster(metav1.ObjectMeta{Name: "db", UID: "uid-db"}, "1")
	moved := false
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cl).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, w client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := w.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if ec, ok := obj.(*etcdv1beta2.EtcdCluster); ok && !moved {
				// The reconcile holds this copy (shard 1); the next read sees shard 2.
				moved = true
				next := ec.DeepCopy()
				next.Labels = map[string]string{testShardKey: "2"}
				return w.Update(ctx, next)
			}
			return nil
		}}).Build()
	rec := record.NewFakeRecorder(100)
	r := newTestClusterReconciler(t, c, rec, time.Now)
	r.Shard = Shard{Key: testShardKey, Value: "1"}
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cl)}); err != nil {
		t.Fatal(err)
	}
	if !moved {
		t.Fatal("the reconcile never read the cluster")
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs); err != nil {
		t.Fatal(err)
	}
	for _, svc := range svcs.Items {
		t.Errorf("Service %s created for a cluster moved away before the first write", svc.Name)
	}
	var budgets policyv1.PodDisruptionBudgetList
	if err := c.List(ctx, &budgets); err != nil {
		t.Fatal(err)
	}
	for _, b := range budgets.Items {
		t.Errorf("PodDisruptionBudget %s created for a cluster moved away", b.Name)
	}
	wantNoPodsNorStatus(ctx, t, c, cl, "")
	if evs := fixture.DrainEvents(rec); len(evs) > 0 {
		t.Errorf("events about a cluster moved away: %v", evs)
	}
}

// TestReconcileReleasesAClusterMovedWhileObserving: a cluster relabelled for another
// shard after the reconcile's first check (while it observed) is not stepped on: the
// bootstrap it planned is not performed and no status is written. The check before the
// step asks the API server: this instance's cache here never shows the move (it lags),
// as the cache of the instance being left may lag the one of the instance joined.
func TestReconcileReleasesAClusterMovedWhileObserving(t *testing.T) {
	s := fixture.Scheme()
	cl := shardCluster(metav1.ObjectMeta{Name: "db", UID: "uid-db"}, "1")
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cl).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}).Build()
	apiReads := 0
	api := interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, w client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := w.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		if _, ok := obj.(*etcdv1beta2.EtcdCluster); ok {
			// The first read (right after the reconcile read the cache) still shows
			// shard 1; every later one shows the move, which the cache never does.
			if apiReads++; apiReads > 1 {
				obj.SetLabels(map[string]string{testShardKey: "2"})
			}
		}
		return nil
	}})
	rec := record.NewFakeRecorder(100)
	r := newTestClusterReconciler(t, c, rec, time.Now)
	r.APIReader = api
	r.Shard = Shard{Key: testShardKey, Value: "1"}
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cl)}); err != nil {
		t.Fatal(err)
	}
	if apiReads < 2 {
		t.Errorf("the API server was asked for the cluster %d times; want a check before the first write and one before the step", apiReads)
	}
	wantNoPodsNorStatus(ctx, t, c, cl, " before the step")
}
