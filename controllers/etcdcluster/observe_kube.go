package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// What the API server says about a cluster's members: their pods, claims and nodes.

// listMemberPods lists the pods carrying the cluster's labels, whoever controls them.
func (r *Reconciler) listMemberPods(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return nil, fmt.Errorf("list member pods: %w", err)
	}
	return pods.Items, nil
}

// ownPods are the pods the cluster controls, by name.
func ownPods(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) map[string]*corev1.Pod {
	own := map[string]*corev1.Pod{}
	for i := range pods {
		if p := &pods[i]; metav1IsControlledBy(p, c) {
			own[p.Name] = p
		}
	}
	return own
}

// observeClaims sets the members status last named (kept there while no member answers,
// see planner.Summarize) and, for a cluster whose members keep their data on claims, the
// claims the cluster controls.
func (r *Reconciler) observeClaims(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *planner.Observed) error {
	obs.KnownMembers = append(append([]string(nil), c.Status.Members.Ready...), c.Status.Members.Unready...)
	obs.RecordedVersion = c.Status.CurrentVersion
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	var claims corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &claims, client.InNamespace(c.Namespace),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return fmt.Errorf("list member claims: %w", err)
	}
	for i := range claims.Items {
		if pvc := &claims.Items[i]; pvc.DeletionTimestamp == nil && metav1IsControlledBy(pvc, c) {
			obs.Claims = append(obs.Claims, pvc.Name)
			if pvc.Spec.VolumeName == "" && pvc.Status.Phase == corev1.ClaimPending {
				obs.UnboundClaims = append(obs.UnboundClaims, pvc.Name) // never bound: no data
			}
		}
	}
	return nil
}

func metav1IsControlledBy(obj client.Object, owner client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
