package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// SystemPriorityClassPrefix starts the names Kubernetes reserves for its own
// PriorityClasses (system-cluster-critical, system-node-critical): pods of those classes
// preempt nearly everything and are the last evicted.
const SystemPriorityClassPrefix = "system-"

// checkPriorityClass refuses a member PriorityClass the operator was not allowed to give
// (--allowed-priority-classes): with the flag, only the classes it names; without it, any
// class but Kubernetes' own system- ones. The operator creates member pods with its own
// authority, so without this a tenant could make it create pods that preempt other
// tenants' or the platform's. A cluster naming another class gets no new pods until the
// spec or the setting changes. A class the cluster's own member pods already run with
// stays allowed: an operator upgrade (or a narrowed flag) must not turn a running cluster
// Failed and stop its failover; the tenant gains nothing it did not already have. (The
// backup controller's backup and verification pods inherit the cluster's class without
// this check: TODO.)
func (r *Reconciler) checkPriorityClass(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	k, err := render.PodKnobs(c)
	if err != nil || k.PriorityClassName == "" {
		return nil // ValidateCluster reports a bad value
	}
	refused := PriorityClassAllowed(k.PriorityClassName, r.PriorityClasses)
	if refused == nil {
		return nil
	}
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return refused
	}
	for _, p := range ownPods(c, pods) {
		if p.Spec.PriorityClassName == k.PriorityClassName {
			return nil
		}
	}
	return refused
}

// PriorityClassAllowed says whether member pods may run with PriorityClass name under
// the allowlist allowed (--allowed-priority-classes), and if not, why, naming the flag.
func PriorityClassAllowed(name string, allowed []string) error {
	if len(allowed) > 0 {
		if slices.Contains(allowed, name) {
			return nil
		}
		return fmt.Errorf("spec.pod.priorityClassName %q is not allowed by this operator (allowed: %s); its administrator can allow it with --allowed-priority-classes", name, strings.Join(allowed, ", "))
	}
	if strings.HasPrefix(name, SystemPriorityClassPrefix) {
		return fmt.Errorf("spec.pod.priorityClassName %q is one of Kubernetes' own system classes, which this operator gives no pod unless its administrator names it in --allowed-priority-classes", name)
	}
	return nil
}
