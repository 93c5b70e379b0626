package etcdcluster

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// bootstrap executes Bootstrap: the initial members' claims and pods, all started with
// the same --initial-cluster as a new cluster.
func (r *Reconciler) bootstrap(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	names := make([]string, 0, len(a.Members))
	for _, m := range a.Members {
		names = append(names, m.Name)
	}
	// Record the initial cluster before creating any pod, so an operator restarted
	// half-way creates the remaining pods with the very same --initial-cluster.
	if !slices.Equal(c.Status.BootstrapMembers, names) {
		c.Status.BootstrapMembers = names
		c.Status.Phase = etcdv1beta2.ClusterPhaseCreating
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
	}
	initial := render.InitialCluster(c, names, r.ClusterDomain)
	members := make([]render.Member, 0, len(names))
	for _, n := range names {
		members = append(members, render.Member{Name: n, InitialClusterState: render.StateNew, InitialCluster: initial, Version: a.Version})
	}
	if err := r.createMembers(ctx, c, members); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonBootstrapping, "creating %d initial members of etcd %s: %v", len(names), a.Version, names)
	log.FromContext(ctx).WithValues("action", a.Kind.String()).Info("bootstrapping", "members", names)
	return nil
}
