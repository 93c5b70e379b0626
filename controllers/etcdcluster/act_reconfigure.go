package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Rolling reconfiguration, the controller's part: how a member pod differs from the
// current spec (its drift, which the planner's rollout rule rolls out), and the one step that
// changes a running pod in place, its metadata. A pod that needs a new pod is deleted
// (DeletePod with KeepClaim) and recreated by the recreate rule, or replaced through a learner;
// those steps are the existing ones.

// metadataFields reach a running pod by a patch: nothing restarts.
var metadataFields = map[string]bool{fieldLabels: true, fieldAnnotations: true}

// heldFields would be taken up by any new pod, but changing them on a running cluster
// needs steps of their own (peer URLs under a new cluster domain), so while a pod lacks
// one no member is restarted for a rollout.
var heldFields = map[string]bool{fieldClusterDomain: true}

// tlsFields are the TLS Secrets' names: the planner rolls a change of them out when it
// is a proven rotation, and refuses any other (planner/tls.go, observe_tlsrotation.go).
var tlsFields = map[string]bool{fieldPeerSecret: true, fieldServerSecret: true}

// notRolledFields stay as running members were created: a member recreated on its
// claim keeps its claim.
var notRolledFields = map[string]bool{fieldClaimSpec: true}

// podDrift is how pod p differs from the current spec, for the planner.
func podDrift(c *etcdv1beta2.EtcdCluster, domain string, p *corev1.Pod) planner.Drift {
	var d planner.Drift
	// The storage request is expanded in place (act_storage_decide.go); "" compares the rest of
	// the claim spec, which is not rolled out anyway.
	for _, f := range staleSpecFields(c, domain, p, "") {
		switch {
		case notRolledFields[f]:
			continue
		case heldFields[f]:
			d.Held = append(d.Held, f)
			continue
		case tlsFields[f]:
			d.TLS = true
		case metadataFields[f]:
			d.Metadata = true
		default:
			d.NewPod = true
		}
		d.Fields = append(d.Fields, f)
	}
	d.Claim = claimSpecChanged(c, domain, p)
	return d
}

// claimSpecChanged: the pod's claim was created from another claim spec than the
// current one, its storage request included (planner.Drift.Claim; only a bootstrap that
// never formed acts on it). A pod without a fingerprint is judged by inspection.
func claimSpecChanged(c *etcdv1beta2.EtcdCluster, domain string, p *corev1.Pod) bool {
	var recorded map[string]string
	if raw, ok := p.Annotations[AnnotationSpecFingerprint]; ok && json.Unmarshal([]byte(raw), &recorded) == nil {
		return specFingerprint(c, domain)[fieldClaimSpec] != recorded[fieldClaimSpec]
	}
	return slices.Contains(staleByInspection(c, p), fieldClaimSpec)
}

// rolledOut reports whether a stale field is one a rollout brings to running members.
func rolledOut(field string) bool { return !heldFields[field] && !notRolledFields[field] }

// patchPodMetadata executes PatchPodMetadata: the spec's pod labels and annotations are
// put on the member's running pod, and its fingerprint records them, on a fresh read of
// a pod this cluster controls. Keys the operator sets are never taken from the spec;
// keys others added are left alone (so a key removed from the spec stays on running
// pods until they are recreated).
func (r *Reconciler) patchPodMetadata(ctx context.Context, c *etcdv1beta2.EtcdCluster, a planner.Action) error {
	var pod corev1.Pod
	if err := r.freshReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: a.Name}, &pod); err != nil {
		return fmt.Errorf("get pod %s: %w", a.Name, err)
	}
	if !metav1.IsControlledBy(&pod, c) {
		why := fmt.Sprintf("pod %s/%s is not controlled by EtcdCluster %s; not changing its labels or annotations", c.Namespace, a.Name, c.Name)
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonDeletionRefused, why)
		return &notControlledError{msg: why}
	}
	orig := pod.DeepCopy()
	applyPodMetadata(&pod, c, r.ClusterDomain)
	// The resourceVersion in the patch is a precondition: a pod changed or recreated
	// under the same name since the fresh read is not patched.
	patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	if err := r.Patch(ctx, &pod, patch); err != nil {
		return fmt.Errorf("patch labels and annotations of pod %s: %w", a.Name, err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodReconfigured, "%s", a.Message)
	return nil
}

// applyPodMetadata sets the spec's pod labels and annotations on pod, and records them
// in its fingerprint (only those two entries: the pod still lacks whatever else it
// lacked). A pod without a fingerprint (an older operator's) gets none: it is judged on
// what it shows.
func applyPodMetadata(pod *corev1.Pod, c *etcdv1beta2.EtcdCluster, domain string) {
	var labels, annotations map[string]string
	if c.Spec.Pod != nil {
		labels, annotations = c.Spec.Pod.Labels, c.Spec.Pod.Annotations
	}
	for k, v := range labels {
		if render.IsReservedLabel(k) {
			continue
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[k] = v
	}
	for k, v := range annotations {
		if render.IsReservedAnnotation(k) || k == AnnotationSpecFingerprint {
			continue
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	raw, ok := pod.Annotations[AnnotationSpecFingerprint]
	var recorded map[string]string
	if !ok || json.Unmarshal([]byte(raw), &recorded) != nil {
		return
	}
	if recorded == nil {
		recorded = map[string]string{}
	}
	current := specFingerprint(c, domain)
	for f := range metadataFields {
		if h := current[f]; h != "" {
			recorded[f] = h
		} else {
			delete(recorded, f)
		}
	}
	if b, err := json.Marshal(recorded); err == nil {
		pod.Annotations[AnnotationSpecFingerprint] = string(b)
	}
}

// splitRolledOut splits stale fields into those a rollout brings to running members and
// those kept as the members were created.
func splitRolledOut(fields []string) (rolled, kept []string) {
	for _, f := range fields {
		if rolledOut(f) {
			rolled = append(rolled, f)
		} else {
			kept = append(kept, f)
		}
	}
	return rolled, kept
}

// rollingOut is SpecApplied while a rollout moves members onto the current spec: how
// many members are on it and which fields are rolled, then what the members keep (kept,
// with parts "field (pods)") and the storage step's report. Only what is kept warns:
// each rollout step has its own normal event.
func rollingOut(c *etcdv1beta2.EtcdCluster, domain string, pods map[string]*corev1.Pod, rolled, kept, parts []string, storage *storageReport) specAppliedReport {
	rolledSet := map[string]bool{}
	for _, f := range rolled {
		rolledSet[f] = true
	}
	live, onSpec := 0, 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		current := true
		for _, f := range staleSpecFields(c, domain, p, "") {
			if rolledSet[f] {
				current = false
			}
		}
		if current {
			onSpec++
		}
	}
	total := max(live, c.Spec.Size)
	msg := fmt.Sprintf("%d/%d members on the current spec; rolling %s one member at a time", onSpec, total, strings.Join(rolled, ", "))
	for _, f := range rolled {
		if tlsFields[f] {
			// Which TLS step this is: the planner rolls only rotations out (a scheme
			// change is refused and reported as TLSChangeRefused instead).
			msg = "rotating the TLS Secrets: " + msg
			break
		}
	}
	rep := specAppliedReport{Reason: etcdv1beta2.ReasonRollingOut, Message: msg}
	if len(kept) > 0 {
		rep.Message += "; changed after these members were created, applies to members created from now on: " + strings.Join(parts, "; ")
		rep.EventKey = strings.Join(kept, ",")
	}
	if storage != nil && !storage.Settled {
		st := withStorage(kept, parts, *storage)
		if st.Reason == etcdv1beta2.ReasonExpansionNotAllowed {
			rep.Reason = st.Reason
		}
		rep.Message = msg + "; " + st.Message
		rep.EventKey = st.EventKey
	}
	rep.Message = cut(rep.Message, maxHealthMessage)
	return rep
}
