package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// ensureServices creates or updates the headless and client Services as the chart renders
// them. Services exist before any member pod so member DNS names can appear. The
// PodDisruptionBudget comes from the same render but its minAvailable depends on what is
// observed, so it is returned for ensureBudget to apply after observing (one chart
// render per reconcile).
func (r *Reconciler) ensureServices(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*policyv1.PodDisruptionBudget, error) {
	objs, err := r.services.render(clusterKey(c), r.renderer, render.Input{Cluster: c, ClusterDomain: r.ClusterDomain}) // memory_rendered.go
	if err != nil {
		return nil, fmt.Errorf("render services: %w", err)
	}
	var budget *policyv1.PodDisruptionBudget
	for _, obj := range objs {
		switch want := obj.(type) {
		case *policyv1.PodDisruptionBudget:
			budget = want
		case *corev1.Service:
			svc := &corev1.Service{ObjectMeta: want.ObjectMeta}
			if err := r.createOrUpdate(ctx, c, svc, func() {
				svc.Labels, svc.Annotations = want.Labels, want.Annotations
				// ClusterIP and its family fields are immutable once allocated; only the
				// fields the chart owns are copied.
				svc.Spec.Selector = want.Spec.Selector
				svc.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
				if svc.Spec.ClusterIP == "" {
					svc.Spec.ClusterIP = want.Spec.ClusterIP
				}
				applyServiceOptions(&svc.Spec, &want.Spec) // act_resources_service.go
			}); err != nil {
				return nil, err
			}
		}
	}
	if budget == nil {
		return nil, fmt.Errorf("render services: the chart rendered no PodDisruptionBudget")
	}
	return budget, nil
}

// ensureBudget creates or updates the PodDisruptionBudget with the minAvailable the
// observation calls for (render.BudgetMinAvailable): every member of max(spec.size,
// members listed), or a quorum when a member on a cordoned node has nowhere to go.
func (r *Reconciler) ensureBudget(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, want *policyv1.PodDisruptionBudget) error {
	// The chart gives the budget's shape; the number is the operator's (what the chart
	// would render for Input.Budget, without rendering it a second time).
	n := max(c.Spec.Size, len(o.planner.Members))
	minAvailable := intstr.FromInt32(int32(render.BudgetMinAvailable(n, o.planner.NoNodeToLeaveTo)))
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: want.ObjectMeta}
	return r.createOrUpdate(ctx, c, pdb, func() {
		pdb.Labels = want.Labels
		pdb.Spec = *want.Spec.DeepCopy()
		pdb.Spec.MinAvailable = &minAvailable
	})
}

// createOrUpdate wraps controllerutil.CreateOrUpdate (which skips no-op updates) with the
// owner reference.
func (r *Reconciler) createOrUpdate(ctx context.Context, owner *etcdv1beta2.EtcdCluster, obj client.Object, mutate func()) error {
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		mutate()
		return controllerutil.SetControllerReference(owner, obj, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("ensure %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
