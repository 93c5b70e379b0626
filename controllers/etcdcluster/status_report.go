package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func clusterKey(c *etcdv1beta2.EtcdCluster) string { return c.Namespace + "/" + c.Name }

// reportPods sets the conditions read off the member pods.
func (r *Reconciler) reportPods(c *etcdv1beta2.EtcdCluster, o *observation, now string) {
	r.reportPodsHealth(c, o.pods, o.warnings, now)
	r.reportSpecApplied(c, o, now)
}

// reportPodsHealth sets PodsHealthy from the member pods.
func (r *Reconciler) reportPodsHealth(c *etcdv1beta2.EtcdCluster, pods map[string]*corev1.Pod, warnings map[string]*kubeletWarning, now string) {
	r.setCondition(c, podsHealthyCondition(pods, warnings), now)
}

// podsHealthyCondition is PodsHealthy: which member pods cannot run etcd, and why, as
// the scheduler and kubelet say (podsHealth). A failure is announced once per set of
// failing pods and reasons; it is over once every pod is Ready, not when a crash-looping
// container merely runs again for a while.
func podsHealthyCondition(pods map[string]*corev1.Pod, warnings map[string]*kubeletWarning) conditionUpdate {
	h := podsHealth(pods, warnings)
	u := conditionUpdate{Type: etcdv1beta2.ClusterConditionPodsHealthy, Status: h.Status, Reason: h.Reason, Message: h.Message,
		Recovered: h.Status && allPodsReady(pods)}
	if h.Failing {
		u.Fail = h.EventKey
	}
	return u
}

// reasonError carries the condition reason of an error that ends a reconcile early.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

// reconcileFailureReason is the Reconciled condition's reason for an observe error.
func reconcileFailureReason(err error) string {
	var re *reasonError
	if errors.As(err, &re) {
		return re.reason
	}
	return etcdv1beta2.ReasonObserveFailed
}

// reportReconciled sets the Reconciled condition (reconciledCondition).
func (r *Reconciler) reportReconciled(c *etcdv1beta2.EtcdCluster, reason string, err error, announceIt bool, now string) {
	r.setCondition(c, reconciledCondition(reason, err, announceIt), now)
}

// reconciledCondition is Reconciled: True after a successful step, False with the error
// otherwise. announceIt says whether the failure's event is due from here; a failed
// action has its own ActionFailed event at each attempt, and is only remembered so that
// its end is announced.
func reconciledCondition(reason string, err error, announceIt bool) conditionUpdate {
	if err == nil {
		return conditionUpdate{Type: etcdv1beta2.ClusterConditionReconciled, Status: true, Reason: etcdv1beta2.ReasonReconciled,
			Message: "the cluster was observed and the last step succeeded", Recovered: true,
			EventMessage: "the operator observes the cluster and its steps succeed again"}
	}
	msg := cut(err.Error(), maxHealthMessage)
	if !announceIt {
		return conditionUpdate{Type: etcdv1beta2.ClusterConditionReconciled, Reason: reason, Message: msg, Fail: reason, announcedByCaller: true}
	}
	return conditionUpdate{Type: etcdv1beta2.ClusterConditionReconciled, Reason: reason, Message: msg, Fail: reason + ": " + msg}
}

// observeFailed reports an error that stopped the reconcile before any step (services,
// pods or the operator's TLS Secret could not be read or written): nothing was done, the
// condition says why, and the next attempt backs off.
func (r *Reconciler) observeFailed(ctx context.Context, c *etcdv1beta2.EtcdCluster, err error) (ctrl.Result, error) {
	log.FromContext(ctx).Error(err, "cannot observe the cluster")
	now := r.Now()
	r.reportReconciled(c, reconcileFailureReason(err), err, true, now.UTC().Format(timeFormat))
	return ctrl.Result{RequeueAfter: r.backoff.fail(clusterKey(c), "observe", c.Generation, now)}, nil
}

// unsupportedVersion refuses to create a cluster on an etcd version the operator cannot
// run. A cluster that has formed is left to the planner, whose upgrade rules refuse a
// downgrade while still repairing members on the version they run.
func unsupportedVersion(c *etcdv1beta2.EtcdCluster) error {
	if c.Status.Bootstrapped {
		return nil
	}
	return planner.CheckSupported(render.ClusterVersion(c.Spec))
}

// refuseSpec reports a spec the operator will not act on: phase Failed, the reason in
// status and the Available condition, one warning event per new message; nothing is
// created or changed until the spec is fixed.
func (r *Reconciler) refuseSpec(c *etcdv1beta2.EtcdCluster, reason, msg string) (ctrl.Result, error) {
	if c.Status.Reason != msg {
		r.Recorder.Event(c, corev1.EventTypeWarning, reason, msg)
	}
	c.Status.Phase = etcdv1beta2.ClusterPhaseFailed
	c.Status.Reason = msg
	r.setCondition(c, conditionUpdate{Type: etcdv1beta2.ClusterConditionAvailable,
		Status: conditionTrue(c, etcdv1beta2.ClusterConditionAvailable), Reason: reason, Message: msg}, r.Now().UTC().Format(timeFormat))
	return ctrl.Result{}, nil
}

// tlsSecretError marks an unusable TLS Secret, for the Reconciled condition's reason.
func tlsSecretError(err error) error {
	if err == nil {
		return nil
	}
	return &reasonError{reason: etcdv1beta2.ReasonTLSSecretError, err: fmt.Errorf("%w (the operator cannot reach the members without it)", err)}
}

// allPodsReady: every member pod is Ready, the point at which a pod failure is over.
func allPodsReady(pods map[string]*corev1.Pod) bool {
	for _, p := range pods {
		if !podReady(p) {
			return false
		}
	}
	return len(pods) > 0
}
