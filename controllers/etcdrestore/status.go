package etcdrestore

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// setStatus sets what the restore reports, on er only: the CoreOS fields and the
// Succeeded condition. Reconcile writes it once, when it ends (flushStatus); a later
// setStatus in the same reconcile replaces an earlier one.
func (r *Reconciler) setStatus(er *etcdv1beta2.EtcdRestore, status metav1.ConditionStatus, reason, msg string) {
	er.Status.Succeeded = status == metav1.ConditionTrue
	er.Status.Reason = ""
	if status == metav1.ConditionFalse {
		er.Status.Reason = msg
	}
	meta.SetStatusCondition(&er.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.RestoreConditionSucceeded, Status: status, Reason: reason, Message: msg, ObservedGeneration: er.Generation,
	})
}

// flushStatus writes er's status if the reconcile changed it from before (one merge patch
// of the status alone: annotations the reconcile patched meanwhile are not in it), and a
// Warning event for a failure the first time it is reported. A restore deleted
// meanwhile is not an error.
func (r *Reconciler) flushStatus(ctx context.Context, er *etcdv1beta2.EtcdRestore, before *etcdv1beta2.EtcdRestoreStatus) error {
	if reflect.DeepEqual(&er.Status, before) {
		return nil
	}
	base := er.DeepCopy()
	base.Status = *before
	if err := r.Status().Patch(ctx, er, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(err)
	}
	now := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
	if now == nil || now.Status != metav1.ConditionFalse {
		return nil
	}
	if was := meta.FindStatusCondition(before.Conditions, etcdv1beta2.RestoreConditionSucceeded); was != nil &&
		was.Status == now.Status && was.Reason == now.Reason && was.Message == now.Message && was.ObservedGeneration == now.ObservedGeneration {
		return nil // reported before
	}
	r.Recorder.Event(er, corev1.EventTypeWarning, now.Reason, now.Message)
	return nil
}

// setAnnotation writes one annotation of er (a merge patch of it alone) and takes back
// the server's metadata, leaving er.Status as the reconcile set it: the status is written
// when the reconcile ends, and a patch's response would otherwise reset it.
func (r *Reconciler) setAnnotation(ctx context.Context, er *etcdv1beta2.EtcdRestore, key, value string) error {
	return r.setAnnotations(ctx, er, map[string]string{key: value})
}

// setAnnotations sets several annotations of er in one patch.
func (r *Reconciler) setAnnotations(ctx context.Context, er *etcdv1beta2.EtcdRestore, kv map[string]string) error {
	orig := er.DeepCopy()
	cp := er.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	for k, v := range kv {
		cp.Annotations[k] = v
	}
	if err := r.Patch(ctx, cp, client.MergeFrom(orig)); err != nil {
		return err
	}
	er.ObjectMeta = cp.ObjectMeta
	return nil
}

// setFinalizer adds (on) or removes er's RootSecretFinalizer in one patch of its
// metadata; like setAnnotations it leaves er's status as the reconcile set it.
func (r *Reconciler) setFinalizer(ctx context.Context, er *etcdv1beta2.EtcdRestore, on bool) error {
	orig := er.DeepCopy()
	cp := er.DeepCopy()
	if on {
		controllerutil.AddFinalizer(cp, RootSecretFinalizer)
	} else {
		controllerutil.RemoveFinalizer(cp, RootSecretFinalizer)
	}
	if err := r.Patch(ctx, cp, client.MergeFrom(orig)); err != nil {
		return err
	}
	er.ObjectMeta = cp.ObjectMeta
	return nil
}
