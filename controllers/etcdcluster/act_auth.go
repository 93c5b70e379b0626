package etcdcluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/etcdauth"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// etcd authentication (v1 spec.auth, v1beta2 annotation etcd.database.coreos.com/auth):
// the root Secret, the operator's credentials, and the step that turns auth on
// (internal/etcdauth decides it). The password is read into memory and handed to the
// etcd client only: it is in no log line, event, condition or error.

// The operator creates the root Secret of a cluster that names none. Reading Secrets is
// granted already (get, uncached); create is added here.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create

// authObservation is what a reconcile found of the cluster's auth.
type authObservation struct {
	wanted, wasOn bool
	specErr       error
	secret        string // the root Secret's name
	password      string
	secretErr     error
	// rejected: etcd refused the password; the client was made without it.
	rejected bool
}

// observeAuth reads the spec and the root Secret, creating the operator's own Secret
// when the spec names none. A failure is recorded, not returned: the cluster is still
// observed (without credentials) and the AuthEnabled condition says what is wrong.
func (r *Reconciler) observeAuth(ctx context.Context, c *etcdv1beta2.EtcdCluster) authObservation {
	var a authObservation
	a.wanted, a.secret = etcdv1beta2.AuthOf(c)
	a.wasOn = conditionTrue(c, etcdv1beta2.ClusterConditionAuthEnabled)
	if err := etcdv1beta2.ValidateAuth(c); err != nil {
		a.specErr = err
		if !a.wasOn {
			return a
		}
	}
	if !a.wanted && !a.wasOn {
		return a
	}
	if a.secret == "" { // on before, and the spec dropped it: the operator's Secret
		a.secret = etcdv1beta2.OperatorRootSecretName(c)
	}
	a.password, a.secretErr = r.rootPassword(ctx, c, a.secret, !a.wasOn)
	return a
}

// blocking is the error that stops a reconcile before anything is planned: with auth on
// and no usable credentials, etcd answers no member list, and a planner that saw no
// members could take a healthy cluster for a broken one. Nil when the operator can work.
func (a authObservation) blocking() error {
	switch {
	case a.rejected:
		return fmt.Errorf("etcd refused the root user's password from Secret %s (key %q): nothing is changed until it holds root's password", a.secret, etcdv1beta2.AuthPasswordKey)
	case a.wasOn && a.secretErr != nil:
		return fmt.Errorf("etcd authentication is on and its root Secret %s is unusable (%v): nothing is changed until it is restored", a.secret, a.secretErr)
	}
	return nil
}

// rootPassword reads the password from the root Secret; the operator's own Secret is
// created (with a random password, owned by the cluster) when it does not exist.
// A Secret gone after auth was turned on is not made again (mayCreate false): a new
// password would not be root's.
func (r *Reconciler) rootPassword(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, mayCreate bool) (string, error) {
	var s corev1.Secret
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &s)
	own := name == etcdv1beta2.OperatorRootSecretName(c)
	switch {
	case apierrors.IsNotFound(err) && own && mayCreate:
		return r.createRootSecret(ctx, c, name)
	case apierrors.IsNotFound(err):
		return "", errors.New("not found: create it with the root user's password under key \"" + etcdv1beta2.AuthPasswordKey + "\"")
	case err != nil:
		return "", err
	}
	// Checked before the password is read: it goes to this cluster's members only when
	// the Secret is for this cluster (not another cluster's, not one merely named).
	if err := etcdv1beta2.CheckRootSecretOwner(c, &s); err != nil {
		return "", err
	}
	pw := string(s.Data[etcdv1beta2.AuthPasswordKey])
	if pw == "" {
		return "", fmt.Errorf("has no key %q (or it is empty)", etcdv1beta2.AuthPasswordKey)
	}
	return pw, nil
}

// createRootSecret creates <cluster>-etcd-root with a random password, owned by the
// cluster (deleted with it), and returns the password. One created meanwhile by another
// reconcile is left as it is and read next time ("" now: auth waits a reconcile).
func (r *Reconciler) createRootSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	pw := base64.RawURLEncoding.EncodeToString(b)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: render.ClusterLabels(c.Name)},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			etcdv1beta2.AuthPasswordKey: []byte(pw),
			"username":                  []byte(etcdadmin.RootUser),
		},
	}
	if err := controllerutil.SetControllerReference(c, s, r.Scheme); err != nil {
		return "", err
	}
	if err := r.Client.Create(ctx, s); apierrors.IsAlreadyExists(err) {
		return "", errors.New("created meanwhile; read on the next reconcile")
	} else if err != nil {
		return "", fmt.Errorf("creating it: %w", err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonAuthEnabling, "created root Secret %s for etcd authentication", name)
	return pw, nil
}

// credentials are the user and password the operator's etcd client carries ("" none).
func (a authObservation) credentials() (user, password string) {
	if a.password == "" {
		return "", ""
	}
	return etcdadmin.RootUser, a.password
}

// reconcileAuth decides and takes the auth step after the planner's step, and sets the
// AuthEnabled condition. Auth is turned on only when the planner had nothing to do
// (steady), so it never runs beside a membership change.
func (r *Reconciler) reconcileAuth(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, action planner.Action, result ctrl.Result) ctrl.Result {
	a := o.auth
	in := etcdauth.Observed{
		Wanted: a.wanted, WasOn: a.wasOn, SpecError: a.specErr, RootSecret: a.secret, SecretError: a.secretErr,
		Rejected: a.rejected, Size: c.Spec.Size, Members: len(o.planner.Members), Steady: action.Kind == planner.Done,
		Formed: o.planner.Bootstrapped && o.planner.MembersKnown && o.members != nil,
	}
	if !in.Wanted && !in.WasOn && in.SpecError == nil {
		return result
	}
	for _, m := range o.planner.Members {
		if m.Reachable && !m.IsLearner {
			in.Healthy++
		}
	}
	if o.admin != nil && in.Formed && a.secretErr == nil && !a.rejected {
		on, err := o.admin.AuthEnabled(ctx)
		if err == nil {
			in.AuthKnown, in.AuthOn = true, on
		} else {
			log.FromContext(ctx).V(1).Info("auth status not answered", "err", err.Error())
		}
	}
	d := etcdauth.Decide(in)
	now := r.Now().UTC().Format(timeFormat)
	if d.Step == etcdauth.Enable {
		if err := o.admin.EnableAuth(ctx, a.password); err != nil {
			r.Recorder.Eventf(c, corev1.EventTypeWarning, etcdv1beta2.ReasonActionFailed, "turning etcd authentication on: %v", err)
			d.Condition.Message = "turning etcd authentication on failed, retrying: " + err.Error()
		} else {
			r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.ReasonAuthEnabled, "etcd authentication is on (root user, password in Secret %s)", a.secret)
			d = etcdauth.Decide(withAuthOn(in))
		}
	}
	if d.Report {
		u := conditionUpdate{Type: etcdv1beta2.ClusterConditionAuthEnabled, Status: d.Condition.Status, Reason: d.Condition.Reason, Message: d.Condition.Message}
		switch d.Condition.Reason {
		case etcdv1beta2.ReasonAuthSecretError, etcdv1beta2.ReasonAuthRejected, etcdv1beta2.ReasonInvalidSpec, etcdv1beta2.ReasonAuthMembersUnhealthy:
			u.Fail = d.Condition.Reason
			u.EventReason = d.Condition.Reason
		case etcdv1beta2.ReasonAuthEnabled:
			u.Recovered = true
		}
		r.setCondition(c, u, now)
	}
	if d.Step != etcdauth.None && (result.RequeueAfter == 0 || result.RequeueAfter > activeResync) {
		result.RequeueAfter = activeResync
	}
	return result
}

func withAuthOn(in etcdauth.Observed) etcdauth.Observed {
	in.AuthKnown, in.AuthOn = true, true
	return in
}
