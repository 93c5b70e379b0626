package etcdrestore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
)

// Replacing a cluster with etcd authentication on (v1 spec.auth, the v1beta2 auth
// annotations). The backup holds etcd's auth state: the root user, with the password the
// old cluster's root Secret holds. So the new cluster gets the old one's auth annotations,
// and the operator's root Secret <cluster>-etcd-root, which the old cluster owns and
// would take with it, is kept: before the delete the EtcdRestore becomes a second owner
// of it (the garbage collector then only drops the old cluster's reference), and once
// the new cluster exists it becomes the Secret's controller and the restore lets go.
// The Secret is never copied, so its password exists in one object only and is read by
// no one here. Whichever name the cluster gives it, the Secret is kept when the old
// cluster owns it (its deletion would take it); one it does not own is left alone.

// Secrets are read uncached and updated to move their ownership (nothing else of them is
// changed).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;update

// authCarried are the annotations a replaced cluster's auth is carried in: auth on when
// its spec asks for it or its AuthEnabled condition says it is on (it stays on when the
// spec drops it), and the root Secret it names, if any.
func authCarried(old *etcdv1beta2.EtcdCluster) map[string]string {
	on, _ := etcdv1beta2.AuthOf(old)
	if !on && !authWasOn(old) {
		return nil
	}
	a := map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	if s := old.Annotations[etcdv1beta2.AuthRootSecretAnnotation]; s != "" {
		a[etcdv1beta2.AuthRootSecretAnnotation] = s
	}
	return a
}

func authWasOn(c *etcdv1beta2.EtcdCluster) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionAuthEnabled && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// keepRootSecret makes er a second owner of old's root Secret, before old is deleted,
// and returns the Secret's name ("" when there is none to keep: auth off, none made yet,
// or one old does not own, which its deletion leaves alone). Whether it is kept is
// decided from the Secret itself, not from whether the name was written out: a user may
// name <cluster>-etcd-root explicitly, and the Secret is then still the one the operator
// made, owned by old and deleted with it.
func (r *Reconciler) keepRootSecret(ctx context.Context, er *etcdv1beta2.EtcdRestore, old *etcdv1beta2.EtcdCluster, carried map[string]string) (string, error) {
	if carried == nil {
		return "", nil
	}
	name := rootSecretOf(old)
	var s corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: old.Namespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get root Secret %s: %w", name, err)
	}
	if ownedBy(&s, er.UID) {
		return name, nil // kept already, by this restore before a restart
	}
	if !ownedBy(&s, old.UID) {
		return "", nil // not old's: not deleted with the cluster either
	}
	if err := controllerutil.SetOwnerReference(er, &s, r.Scheme()); err != nil {
		return "", err
	}
	if err := r.Update(ctx, &s); err != nil {
		return "", fmt.Errorf("keep root Secret %s for the new cluster: %w", name, err)
	}
	return name, nil
}

// rootSecretOf is the root Secret c uses: the one it names, else the operator's (also
// when auth is on by its condition only, as the cluster controller reads it).
func rootSecretOf(c *etcdv1beta2.EtcdCluster) string {
	if on, name := etcdv1beta2.AuthOf(c); on {
		return name
	}
	return etcdv1beta2.OperatorRootSecretName(c)
}

// handOverRootSecret gives the cluster the restore created (c) the root Secret kept
// from the cluster it replaced, and drops the restore's reference: c becomes its
// controller when it has the operator's name (the cluster controller uses that name
// only when c controls it), an owner otherwise. It waits (nothing done) while the
// replaced cluster still holds the Secret.
func (r *Reconciler) handOverRootSecret(ctx context.Context, er *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) error {
	rc, ok := replacedRecord(er)
	if !ok || rc.RootSecret == "" {
		return nil
	}
	var s corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: rc.RootSecret}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get root Secret %s: %w", rc.RootSecret, err)
	}
	if !ownedBy(&s, er.UID) && !r.retakesReleased(er, c, &s, rc) {
		return nil // handed over already, or never kept by this restore
	}
	ctl := metav1.GetControllerOf(&s)
	if ctl != nil && ctl.UID != c.UID {
		return nil // the replaced cluster's reference is not dropped yet
	}
	if rc.RootSecret == etcdv1beta2.OperatorRootSecretName(c) {
		err = controllerutil.SetControllerReference(c, &s, r.Scheme())
	} else {
		err = controllerutil.SetOwnerReference(c, &s, r.Scheme())
	}
	if err != nil {
		return err
	}
	if ownedBy(&s, er.UID) {
		if err := controllerutil.RemoveOwnerReference(er, &s, r.Scheme()); err != nil {
			return err
		}
	}
	if err := r.Update(ctx, &s); err != nil {
		return fmt.Errorf("hand root Secret %s over to EtcdCluster %s: %w", rc.RootSecret, c.Name, err)
	}
	return nil
}

// retakesReleased: s is the operator-named root Secret that this restore let go of when
// it failed for good (no owner left), now taken back for the cluster a retry of the
// restore created, as the record the operator signed for this restore names it. Only a
// Secret nothing owns is taken: one anything else claims stays its own.
func (r *Reconciler) retakesReleased(er *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, s *corev1.Secret, rc replacedCluster) bool {
	if len(s.OwnerReferences) > 0 || rc.RootSecret != etcdv1beta2.OperatorRootSecretName(c) {
		return false
	}
	auth, err := r.trustedAuth(er)
	return err == nil && auth != nil
}

// RootSecretFinalizer is on an EtcdRestore while it holds a replaced cluster's root
// Secret for the new cluster (from just before the old cluster's deletion until the
// hand-over): deleting the restore in that window lets go of the Secret first, instead
// of the garbage collector deleting it, and with it the root password of the data.
const RootSecretFinalizer = "etcd.database.coreos.com/root-secret"

// eventReasonRootSecretReleased: a restore deleted while it held the root Secret let go
// of it.
const eventReasonRootSecretReleased = "RootSecretReleased"

// settleRootSecret runs after each reconcile of er (also of one being deleted). A
// restore that holds the kept root Secret and has failed for good, or is being deleted,
// lets go of it: its owner reference and the replaced cluster's (only when that cluster
// is gone or being deleted; a live one keeps controlling its Secret) are dropped, so the Secret, holding the root password of the
// replaced cluster's data, stays; the condition (or an event, when deleted) names it.
// Once er holds no Secret, its finalizer is removed.
func (r *Reconciler) settleRootSecret(ctx context.Context, er *etcdv1beta2.EtcdRestore) error {
	holds, err := r.releaseRootSecret(ctx, er)
	if err != nil || holds || !controllerutil.ContainsFinalizer(er, RootSecretFinalizer) {
		return err
	}
	return client.IgnoreNotFound(r.setFinalizer(ctx, er, false))
}

// releaseRootSecret drops er's hold on the kept root Secret when er failed for good or
// is being deleted, and says whether er still holds it.
func (r *Reconciler) releaseRootSecret(ctx context.Context, er *etcdv1beta2.EtcdRestore) (holds bool, err error) {
	rc, ok := replacedRecord(er)
	if !ok || rc.RootSecret == "" {
		return false, nil
	}
	var s corev1.Secret
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: rc.RootSecret}, &s)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("get root Secret %s: %w", rc.RootSecret, err)
	}
	if !ownedBy(&s, er.UID) {
		return false, nil
	}
	deleting := !er.DeletionTimestamp.IsZero()
	cond := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
	failed := cond != nil && cond.Status == metav1.ConditionFalse && terminalRestoreReason(cond.Reason)
	if !deleting && !failed {
		return true, nil
	}
	// The replaced cluster's reference is dropped only when that cluster is gone or
	// going: its delete may have failed (the record and the kept Secret are written
	// before it), and a live cluster whose root Secret lost its controller refuses it.
	oldGone, err := r.replacedClusterGone(ctx, er.Namespace, rc)
	if err != nil {
		return true, err
	}
	var rest []metav1.OwnerReference
	for _, ref := range s.OwnerReferences {
		if ref.UID != er.UID && (!oldGone || string(ref.UID) != rc.UID) {
			rest = append(rest, ref)
		}
	}
	s.OwnerReferences = rest
	if err := r.Update(ctx, &s); err != nil {
		return true, fmt.Errorf("release root Secret %s: %w", rc.RootSecret, err)
	}
	note := fmt.Sprintf("The root Secret %s of the replaced cluster (its root user's password, which the backup's data has) is no longer "+
		"owned by this EtcdRestore and is not deleted with it; delete it yourself once no cluster needs it, or label it %s=%s "+
		"for a cluster of that name to use it", rc.RootSecret, etcdv1beta2.AuthRootSecretForLabel, rc.Name)
	if !oldGone {
		note = fmt.Sprintf("The replaced EtcdCluster %s was not deleted and keeps its root Secret %s", rc.Name, rc.RootSecret)
	}
	if deleting {
		r.Recorder.Event(er, corev1.EventTypeWarning, eventReasonRootSecretReleased, "EtcdRestore deleted before the new cluster was created. "+note)
	} else {
		r.setStatus(er, cond.Status, cond.Reason, strings.TrimSuffix(cond.Message, ".")+". "+note)
	}
	return false, nil
}

// replacedClusterGone says whether the cluster the record names is gone (or another
// cluster now has its name) or is being deleted; read uncached, since a stale "still
// there" only keeps a reference, but a stale "gone" would orphan a live cluster's Secret.
func (r *Reconciler) replacedClusterGone(ctx context.Context, ns string, rc replacedCluster) (bool, error) {
	var old etcdv1beta2.EtcdCluster
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: rc.Name}, &old)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get replaced EtcdCluster %s: %w", rc.Name, err)
	}
	return string(old.UID) != rc.UID || !old.DeletionTimestamp.IsZero(), nil
}

func ownedBy(o metav1.Object, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// replacedRecord is ReplacedClusterAnnotation's value.
func replacedRecord(er *etcdv1beta2.EtcdRestore) (replacedCluster, bool) {
	var rc replacedCluster
	raw, ok := er.Annotations[ReplacedClusterAnnotation]
	if !ok || json.Unmarshal([]byte(raw), &rc) != nil {
		return rc, false
	}
	return rc, true
}

// trustedAuth is the auth the record carries, when the operator's signature of it for
// this restore verifies; nil without a record or with one without auth. A record that
// carries auth but whose signature does not verify (written or changed by anyone else,
// or the signing key changed) is an error: the restored data has auth on, and a cluster
// created without it would lock the operator out without a word.
func (r *Reconciler) trustedAuth(er *etcdv1beta2.EtcdRestore) (map[string]string, error) {
	rc, ok := replacedRecord(er)
	if !ok || rc.Auth == nil {
		return nil, nil
	}
	if !r.signedRecord(er) {
		return nil, fmt.Errorf("annotation %s carries etcd authentication of the replaced EtcdCluster %s, but its signature (%s) does not verify "+
			"with the operator's signing key: the cluster is not created without the auth its restored data has on. Delete this "+
			"EtcdRestore and restore again, creating the cluster with its auth annotations yourself",
			ReplacedClusterAnnotation, rc.Name, ReplacedClusterSignatureAnnotation)
	}
	return rc.Auth, nil
}

// signedRecord: the replaced-cluster record is the one the operator wrote for this
// restore (its signature verifies with the operator's key).
func (r *Reconciler) signedRecord(er *etcdv1beta2.EtcdRestore) bool {
	return pinsign.VerifyReplaced(r.PinKey, string(er.UID), er.Annotations[ReplacedClusterAnnotation], er.Annotations[ReplacedClusterSignatureAnnotation])
}

// carryAuth puts the auth annotations carried from a replaced cluster on the cluster to
// create. Only those two keys are taken.
func carryAuth(c *etcdv1beta2.EtcdCluster, auth map[string]string) {
	for _, k := range []string{etcdv1beta2.AuthAnnotation, etcdv1beta2.AuthRootSecretAnnotation} {
		if v, ok := auth[k]; ok {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[k] = v
		}
	}
}
