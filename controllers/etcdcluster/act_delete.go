package etcdcluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// deleteMember deletes a removed member's pod and its PVC: a removed member can never
// rejoin with its old data, and its name is never reused. Each goes only if this
// cluster controls it (deleteOwned); the claim is not touched if the pod was refused.
func (r *Reconciler) deleteMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, name string) error {
	if err := r.deleteOwned(ctx, c, &corev1.Pod{}, name, observedUID(o, name)); err != nil {
		return err
	}
	return r.deleteOwned(ctx, c, &corev1.PersistentVolumeClaim{}, name, "")
}

// observedUID is the UID of the pod the plan was made on, if the observation had one.
func observedUID(o *observation, name string) types.UID {
	if o != nil {
		if p := o.pods[name]; p != nil {
			return p.UID
		}
	}
	return ""
}

// notControlledError is a deletion refused because the object is not this cluster's.
type notControlledError struct{ msg string }

func (e *notControlledError) Error() string { return e.msg }

// deleteOwned deletes the object of obj's kind named name only if a fresh read from
// the API server shows it controlled by c (and, when expectUID is set, that it is still
// the object the plan was made on), and deletes it with that read's UID as a
// precondition, so an object recreated under the name in between is never hit. A
// missing object is done. Anything else is left alone with a warning event and a
// notControlledError, never silently.
func (r *Reconciler) deleteOwned(ctx context.Context, c *etcdv1beta2.EtcdCluster, obj client.Object, name string, expectUID types.UID) error {
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	if err := r.freshReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read %s %s before deleting it: %w", kind, name, err)
	}
	var why string
	switch {
	case !metav1.IsControlledBy(obj, c):
		why = fmt.Sprintf("%s %s/%s is not controlled by EtcdCluster %s (uid %s); not deleting it", kind, c.Namespace, name, c.Name, c.UID)
	case expectUID != "" && obj.GetUID() != expectUID:
		why = fmt.Sprintf("%s %s/%s was replaced (uid %s, planned on %s); not deleting it", kind, c.Namespace, name, obj.GetUID(), expectUID)
	}
	if why != "" {
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonDeletionRefused, why)
		return &notControlledError{msg: why}
	}
	uid := obj.GetUID()
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s: %w", kind, name, err)
	}
	return nil
}

// freshReader reads from the API server, not the cache: what is deleted is decided on
// the object as it is now.
func (r *Reconciler) freshReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
