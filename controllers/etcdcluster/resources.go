package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// ensureServices creates or updates the headless and client Services and the PDB as the
// chart renders them. Services exist before any member pod so member DNS names can appear.
func (r *Reconciler) ensureServices(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	objs, err := r.renderer.Render(render.Input{Cluster: c, ClusterDomain: r.ClusterDomain})
	if err != nil {
		return fmt.Errorf("render services: %w", err)
	}
	for _, obj := range objs {
		switch want := obj.(type) {
		case *corev1.Service:
			svc := &corev1.Service{ObjectMeta: want.ObjectMeta}
			if err := r.createOrUpdate(ctx, c, svc, func() {
				svc.Labels, svc.Annotations = want.Labels, want.Annotations
				// ClusterIP and its family fields are immutable once allocated; only the
				// fields the chart owns are copied.
				svc.Spec.Ports = want.Spec.Ports
				svc.Spec.Selector = want.Spec.Selector
				svc.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
				if svc.Spec.ClusterIP == "" {
					svc.Spec.ClusterIP = want.Spec.ClusterIP
				}
				if want.Spec.Type != "" {
					svc.Spec.Type = want.Spec.Type
				}
			}); err != nil {
				return err
			}
		case *policyv1.PodDisruptionBudget:
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: want.ObjectMeta}
			if err := r.createOrUpdate(ctx, c, pdb, func() {
				pdb.Labels = want.Labels
				pdb.Spec = want.Spec
			}); err != nil {
				return err
			}
		}
	}
	return nil
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
