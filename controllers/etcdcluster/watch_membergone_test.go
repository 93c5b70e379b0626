package etcdcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// A member pod's deletion cuts short only its own cluster's observation, and only while
// that observation asks etcd.
func TestObservationInterruptedByItsClusterOnly(t *testing.T) {
	var f observationsInFlight
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	ctx, done := f.begin(context.Background(), "ns/a")
	f.interrupt("ns/b", t0)
	f.interrupt("other/a", t0)
	if ctx.Err() != nil {
		t.Fatalf("another cluster's pod interrupted ns/a: %v", context.Cause(ctx))
	}
	f.interrupt("ns/a", t0)
	if !errors.Is(context.Cause(ctx), errMemberPodGone) {
		t.Fatalf("cause %v, want errMemberPodGone", context.Cause(ctx))
	}
	if !done() {
		t.Fatal("done reports no interruption")
	}

	ctx, done = f.begin(context.Background(), "ns/a")
	if done() {
		t.Fatal("an observation nobody interrupted reports an interruption")
	}
	if ctx.Err() == nil {
		t.Fatal("done leaves the calls' context open")
	}
	f.interrupt("ns/a", t0.Add(time.Hour)) // after the observation: nothing to cut, and no panic
	if len(f.cancel) != 0 {
		t.Fatalf("slots left behind: %v", f.cancel)
	}
}

// Pods deleted in a loop cut a cluster's observations short at most once per
// interruptEvery: the observation after an interrupted one runs to its end.
func TestObservationInterruptedAtMostOncePerInterval(t *testing.T) {
	var f observationsInFlight
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	interruptedAt := func(at time.Time) bool {
		_, done := f.begin(context.Background(), "ns/a")
		f.interrupt("ns/a", at)
		return done()
	}
	if !interruptedAt(t0) {
		t.Fatal("first deletion did not interrupt")
	}
	if interruptedAt(t0.Add(interruptEvery - time.Millisecond)) {
		t.Fatal("a second deletion within interruptEvery interrupted again")
	}
	if !interruptedAt(t0.Add(interruptEvery)) {
		t.Fatal("a deletion interruptEvery later did not interrupt")
	}
	f.forget("ns/a")
	if len(f.last) != 0 {
		t.Fatalf("forget left %v", f.last)
	}
}

func ownedPod(kind, apiVersion string) *corev1.Pod {
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-abc", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "c", Controller: &yes}}}}
}

// The owned pods' predicate lets every event through and interrupts the owning cluster's
// observation on a deletion or the start of one, and on nothing else.
func TestInterruptOnMemberPodGone(t *testing.T) {
	now := metav1.Now()
	terminating := ownedPod("EtcdCluster", "etcd.database.coreos.com/v1")
	terminating.DeletionTimestamp = &now
	relabelled := ownedPod("EtcdCluster", "etcd.database.coreos.com/v1beta2")
	relabelled.Labels = map[string]string{"x": "y"}
	for _, tc := range []struct {
		name        string
		ev          func(r *Reconciler) bool
		interrupted bool
	}{
		{name: "member pod deleted", interrupted: true, ev: func(r *Reconciler) bool {
			return r.interruptOnMemberPodGone().Delete(event.DeleteEvent{Object: ownedPod("EtcdCluster", "etcd.database.coreos.com/v1beta2")})
		}},
		{name: "member pod starts terminating", interrupted: true, ev: func(r *Reconciler) bool {
			return r.interruptOnMemberPodGone().Update(event.UpdateEvent{ObjectOld: ownedPod("EtcdCluster", "etcd.database.coreos.com/v1"), ObjectNew: terminating})
		}},
		{name: "member pod changes otherwise", ev: func(r *Reconciler) bool {
			return r.interruptOnMemberPodGone().Update(event.UpdateEvent{ObjectOld: ownedPod("EtcdCluster", "etcd.database.coreos.com/v1beta2"), ObjectNew: relabelled})
		}},
		{name: "terminating pod changes again", ev: func(r *Reconciler) bool {
			return r.interruptOnMemberPodGone().Update(event.UpdateEvent{ObjectOld: terminating, ObjectNew: terminating})
		}},
		{name: "pod of another kind's deleted", ev: func(r *Reconciler) bool {
			return r.interruptOnMemberPodGone().Delete(event.DeleteEvent{Object: ownedPod("EtcdCluster", "example.com/v1")})
		}},
		{name: "pod created", ev: func(r *Reconciler) bool {
			return r.interruptOnMemberPodGone().Create(event.CreateEvent{Object: ownedPod("EtcdCluster", "etcd.database.coreos.com/v1beta2")})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReconciler(t, Reconciler{})
			ctx, done := r.inflight.begin(context.Background(), "ns/c")
			defer done()
			if !tc.ev(r) {
				t.Error("the event was filtered out: the cluster would not be queued")
			}
			if got := errors.Is(context.Cause(ctx), errMemberPodGone); got != tc.interrupted {
				t.Errorf("interrupted = %v, want %v", got, tc.interrupted)
			}
		})
	}
}
