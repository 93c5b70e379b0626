package etcdbackup

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// TestUnlabelledBackupPodOfOlderOperatorFinishes: a backup pod an operator older than
// the label-selected cache started lacks the label that cache selects on, so the
// manager's client never finds it. The backup reads it from the API instead, labels it
// (its end then wakes the backup), starts no second pod, and records its result.
func TestUnlabelledBackupPodOfOlderOperatorFinishes(t *testing.T) {
	h := newHarness(t, pvcBackup("upgraded", 3600), mainCluster("upgraded")...)
	h.reconcile() // creates the pod, as the older operator did
	old := h.mustPod()
	delete(old.Labels, render.LabelApp)
	if err := h.c.Update(h.ctx, old); err != nil {
		t.Fatal(err)
	}
	// The manager's client as controllers.ApplyCacheOptions makes it: pods outside the selector are not found.
	creates := 0
	h.r.Client = interceptor.NewClient(h.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if p, ok := obj.(*corev1.Pod); ok && !render.OwnedSelector().Matches(labels.Set(p.Labels)) {
				return apierrors.NewNotFound(corev1.Resource("pods"), key.Name)
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates++
			return c.Create(ctx, obj, opts...)
		},
	})

	h.reconcile()
	if got := h.mustPod().Labels[render.LabelApp]; got != render.AppOperatorPod {
		t.Errorf("the older operator's pod has app=%q, want %q", got, render.AppOperatorPod)
	}
	if creates != 0 {
		t.Errorf("%d creates while the older pod runs, want none", creates)
	}
	h.clock.Advance(40 * time.Second)
	h.succeedPod(storedResult())
	h.reconcile()
	if eb := h.backup(); !eb.Status.Succeeded || eb.Status.EtcdRevision != 42 {
		t.Errorf("status %+v, want the older pod's result", eb.Status)
	}
	if h.pod() != nil {
		t.Error("the finished pod was not deleted")
	}
}
