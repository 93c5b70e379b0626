package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// A node cordoned (or uncordoned) wakes the clusters with member pods on it at once: a
// drain evicts right after cordoning, and a member it waits for should start moving
// now, not at the next resync.

// cordonChanged passes Node updates that flip spec.unschedulable.
var cordonChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		was, okOld := e.ObjectOld.(*corev1.Node)
		is, okNew := e.ObjectNew.(*corev1.Node)
		return okOld && okNew && was.Spec.Unschedulable != is.Spec.Unschedulable
	},
}

// clustersOnNode maps a Node to the clusters whose member pods run on it.
func (r *Reconciler) clustersOnNode(ctx context.Context, node client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.HasLabels{render.LabelApp, render.LabelCluster}); err != nil {
		log.FromContext(ctx).Error(err, "list member pods of a cordoned node", "node", node.GetName())
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var out []reconcile.Request
	for _, p := range pods.Items {
		if p.Spec.NodeName != node.GetName() || p.Labels[render.LabelApp] != render.AppName {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[render.LabelCluster]}
		if !seen[key] {
			seen[key] = true
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// nodeCordonHandler enqueues the clusters of a node whose cordon changed.
func (r *Reconciler) nodeCordonHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(r.clustersOnNode)
}
