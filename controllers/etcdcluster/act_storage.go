package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// reconcileStorage is the storage step of a reconcile, beside the planner's membership
// step: it reads the claims the cluster controls and the StorageClasses, raises the
// storage request of each claim below the spec's whose class allows expansion (one merge
// patch per claim), and returns what it found for the SpecApplied condition (nil: not
// judged this time). It never
// blocks the membership step: a failed read or patch is logged, reported and retried on
// the next reconcile.
func (r *Reconciler) reconcileStorage(ctx context.Context, c *etcdv1beta2.EtcdCluster) *storageReport {
	want := wantedStorage(c)
	if want == nil {
		return nil
	}
	claims, err := r.memberClaims(ctx, c)
	if err != nil {
		log.FromContext(ctx).Error(err, "storage step: read member claims")
		return nil // not judged this time
	}
	states := make([]claimState, 0, len(claims))
	byName := map[string]*corev1.PersistentVolumeClaim{}
	below := false
	for _, pvc := range claims {
		s := readClaim(pvc)
		states = append(states, s)
		byName[pvc.Name] = pvc
		below = below || s.Request.Cmp(*want) < 0
	}
	// StorageClasses matter only to a claim that should grow: a cluster at its size reads
	// none (nor needs the right to).
	var classes storageClasses
	if below {
		if classes, err = r.storageClasses(ctx); err != nil {
			log.FromContext(ctx).Error(err, "storage step: read StorageClasses")
			return nil
		}
	}
	d := decideStorage(want, states, classes)
	var failed []string
	for _, name := range d.Expand {
		pvc := byName[name]
		before := pvc.Spec.Resources.Requests.Storage().String() // the patch updates pvc
		if err := r.expandClaim(ctx, pvc, d.Want.String()); err != nil {
			log.FromContext(ctx).Error(err, "storage step: expand claim", "claim", name)
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonClaimExpanded,
			"claim %s: storage request raised from %s to %s", name, before, d.Want.String())
	}
	if len(failed) > 0 {
		d.Report.Settled = false
		if d.Report.Reason == "" {
			d.Report.Reason = etcdv1beta2.ReasonClaimsExpanding
		}
		d.Report.Message += fmt.Sprintf("; could not raise the request of %s, retried", strings.Join(failed, ", "))
	}
	return &d.Report
}

// memberClaims are the claims carrying the cluster's labels that it controls and that
// are not being deleted. Claims of another owner are never touched.
func (r *Reconciler) memberClaims(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]*corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return nil, fmt.Errorf("list member claims: %w", err)
	}
	var own []*corev1.PersistentVolumeClaim
	for i := range list.Items {
		if pvc := &list.Items[i]; pvc.DeletionTimestamp == nil && metav1IsControlledBy(pvc, c) {
			own = append(own, pvc)
		}
	}
	return own, nil
}

// listStorageClasses lists every StorageClass within storageClassReadBudget.
func (r *Reconciler) listStorageClasses(ctx context.Context) ([]storagev1.StorageClass, error) {
	ctx, cancel := context.WithTimeout(ctx, storageClassReadBudget)
	defer cancel()
	var list storagev1.StorageClassList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list StorageClasses: %w", err)
	}
	return list.Items, nil
}

// storageClasses reads every StorageClass's allowVolumeExpansion (unset is false). The
// read is bounded: the first one starts an informer, which would wait for ever for an
// operator whose role lacks the right (an install older than this step).
func (r *Reconciler) storageClasses(ctx context.Context) (storageClasses, error) {
	list, err := r.listStorageClasses(ctx)
	if err != nil {
		return nil, err
	}
	out := storageClasses{}
	for _, sc := range list {
		out[sc.Name] = sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	}
	return out, nil
}

const storageClassReadBudget = 10 * time.Second

// expandClaim raises one claim's storage request to size with a merge patch, recording
// the request it had before (once: a later expansion keeps the first one). Patching to
// the same size again changes nothing.
func (r *Reconciler) expandClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, size string) error {
	patch := map[string]any{
		"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{string(corev1.ResourceStorage): size}}},
	}
	if _, ok := pvc.Annotations[AnnotationRequestedStorageAtCreation]; !ok {
		if before, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			patch["metadata"] = map[string]any{"annotations": map[string]string{AnnotationRequestedStorageAtCreation: before.String()}}
		}
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return r.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, b))
}
