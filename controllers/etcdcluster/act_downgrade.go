package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// A minor downgrade (internal/planner/downgrade.go) is driven by what etcd reports: the
// downgrade info each member returns in Status, its storage version and its binary
// version. The operator keeps nothing of its own about it, so a restart half-way picks
// up where etcd is.

// observeDowngrade puts etcd's downgrade in progress into the planner's view: the target
// an answering member reports with the downgrade enabled (etcd >= 3.6; every member
// stores the same cluster-wide state, so the first one is enough).
func observeDowngrade(o *observation) {
	o.planner.Downgrade = downgradeOf(o.statuses)
}

func downgradeOf(statuses []etcdadmin.EndpointStatus) *planner.Downgrade {
	for _, s := range statuses {
		if s.Err == nil && s.DowngradeEnabled {
			return &planner.Downgrade{Target: s.DowngradeTarget}
		}
	}
	return nil
}

// actDowngrade executes EnableDowngrade and CancelDowngrade through the cluster's client.
func (r *Reconciler) actDowngrade(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	if a.Kind == planner.CancelDowngrade {
		if err := admin.CancelDowngrade(ctx); err != nil {
			return err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, a.Reason, "%s", a.Message)
		return nil
	}
	if err := admin.EnableDowngrade(ctx, a.Version); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, a.Reason, "%s", a.Message)
	return nil
}
