package etcdbackup

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// staleReads serves every EtcdBackup read from stale, as a cache one write behind does.
type staleReads struct {
	client.Client
	stale *etcdv1beta2.EtcdBackup
}

func (s staleReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if eb, ok := obj.(*etcdv1beta2.EtcdBackup); ok && key == client.ObjectKeyFromObject(s.stale) {
		s.stale.DeepCopyInto(eb)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// The verification controller has just patched the Verified condition when the backup
// controller, holding the lock next, reads the EtcdBackup: a cache one write behind
// would give it the conditions without Verified, and its one merge patch (which
// replaces the conditions list whole) would drop the verification's result.
func TestBackupReconcileKeepsWhatVerificationJustWrote(t *testing.T) {
	eb := pvcBackup("stale", 0)
	eb.Spec.StorageType = etcdv1beta2.BackupStorageTypeABS // refused: the reconcile writes a condition
	h := newHarness(t, eb)
	stale := h.backup()
	verified := stale.DeepCopy()
	meta.SetStatusCondition(&verified.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionVerified,
		Status: metav1.ConditionTrue, Reason: "Verified", Message: "restored and checked"})
	if err := h.c.Status().Update(h.ctx, verified); err != nil {
		t.Fatal(err)
	}
	h.r.Client = staleReads{Client: h.c, stale: stale}

	if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Fatal(err)
	}
	got := h.backup()
	if c := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.BackupConditionSucceeded); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("conditions %+v: want the refusal recorded (the reconcile must write)", got.Status.Conditions)
	}
	if meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.BackupConditionVerified) == nil {
		t.Errorf("conditions %+v: the verification's Verified condition was dropped", got.Status.Conditions)
	}
}
