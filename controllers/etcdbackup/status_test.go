package etcdbackup

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// TestBackupReconcileWritesStatusOnce: each backup reconcile writes the EtcdBackup's
// status at most once, when it ends, and announces an outcome only with that write: a
// finished backup pod is one write and one event, a reconcile with nothing new is no
// write, a failure is one write and one event, the same failure again none.
func TestBackupReconcileWritesStatusOnce(t *testing.T) {
	h := newHarness(t, pvcBackup("once", 3600), mainCluster("once")...)
	patches := 0
	h.r.Client = interceptor.NewClient(h.c.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*etcdv1beta2.EtcdBackup); ok && sub == "status" {
				patches++
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	step := func(name string, wantPatches int, wantEvent string) {
		t.Helper()
		patches = 0
		if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if patches != wantPatches {
			t.Errorf("%s: %d status writes, want %d", name, patches, wantPatches)
		}
		events := h.drainEvents()
		switch {
		case wantEvent == "" && len(events) != 0:
			t.Errorf("%s: events %q, want none", name, events)
		case wantEvent != "" && (len(events) != 1 || !strings.Contains(events[0], wantEvent)):
			t.Errorf("%s: events %q, want one %s", name, events, wantEvent)
		}
	}

	step("start the pod", 0, "")
	h.clock.Advance(40 * time.Second)
	h.succeedPod(storedResult())
	step("record the pod's result", 1, etcdv1beta2.ReasonBackupSucceeded)
	if eb := h.backup(); !eb.Status.Succeeded || eb.Status.EtcdRevision != 42 {
		t.Fatalf("status %+v, want the pod's result", eb.Status)
	}
	step("nothing due", 0, "")

	// A spec no retry can fix: recorded once.
	eb := h.backup()
	eb.Spec.PVC.Path = "dir/"
	eb.Generation++
	if err := h.c.Update(h.ctx, eb); err != nil {
		t.Fatal(err)
	}
	step("invalid spec", 1, etcdv1beta2.ReasonBackupInvalidSpec)
	step("the same invalid spec", 0, "")
	if c := h.condition(); c == nil || c.Reason != etcdv1beta2.ReasonBackupInvalidSpec {
		t.Errorf("condition %+v, want %s", c, etcdv1beta2.ReasonBackupInvalidSpec)
	}
}

// The key lock never waits: a second taker of a held key is told so (and requeues),
// another key is free, and a released key is forgotten.
func TestKeyLockForgetsReleasedKeys(t *testing.T) {
	var l keyLock
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	unlockA, ok := l.tryLock(a)
	if !ok {
		t.Fatal("a free key was refused")
	}
	unlockB, ok := l.tryLock(b)
	if !ok {
		t.Fatal("another key waits for a held one")
	}
	if _, ok := l.tryLock(a); ok {
		t.Fatal("a held key was taken twice")
	}
	unlockA()
	again, ok := l.tryLock(a)
	if !ok {
		t.Fatal("a released key stays held")
	}
	again()
	unlockB()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) != 0 {
		t.Errorf("keys kept after every holder released them: %v", l.held)
	}
}
