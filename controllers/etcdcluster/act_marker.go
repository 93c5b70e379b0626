package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/pinkey"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Signed markers: what proves a pod is the member the operator created for a quorum-loss
// recovery or a total-loss restore. Finishing such a step deletes the old members' pods
// and claims, and abandoning it deletes the new member's, so the proof must be something
// only the operator can produce. Labels, annotations, ownerReferences and the cluster's
// status are all writable by whoever may create pods (or write */status) in the
// namespace; the signature (internal/pinsign.MarkerFacts, keyed with the operator's pin
// key) is not. It covers the pod's UID, which exists only once the pod does, so it is
// written right after the create, and a pod re-created under the same name by anyone
// never inherits it.

// stepOfRecord is the in-progress step status records for the pod named name: its
// kind, token and start; ok is false when status records none for that pod.
func stepOfRecord(c *etcdv1beta2.EtcdCluster, name string) (f pinsign.MarkerFacts, ok bool) {
	if rec := c.Status.Recovery; rec != nil && rec.Member == name && rec.Token != "" {
		return pinsign.MarkerFacts{Step: pinsign.StepRecovery, Token: rec.Token, StartedAt: rec.StartedAt.Unix()}, true
	}
	if rec := c.Status.BackupRestore; rec.InProgress() && rec.Member == name && rec.Token != "" {
		return pinsign.MarkerFacts{Step: pinsign.StepRestore, Token: rec.Token, StartedAt: rec.StartedAt.Unix()}, true
	}
	return pinsign.MarkerFacts{}, false
}

// markerFacts are the facts a marker on pod p vouches for, given what status records.
func markerFacts(c *etcdv1beta2.EtcdCluster, p *corev1.Pod) (pinsign.MarkerFacts, bool) {
	f, ok := stepOfRecord(c, p.Name)
	if !ok {
		return f, false
	}
	f.ClusterUID, f.Pod, f.PodUID = string(c.UID), p.Name, string(p.UID)
	return f, true
}

// verifiedMarker is the token of pod p's recovery or restore marker when the operator
// signed it for the step status records for p, else "". Only such a token is ever shown
// to the planner: the marker alone, the record alone, or both copied onto a pod the
// operator did not make, are never taken for the operator's.
func (r *Reconciler) verifiedMarker(c *etcdv1beta2.EtcdCluster, p *corev1.Pod) string {
	tok := p.Annotations[render.AnnotationRecoveryToken]
	if tok == "" {
		return ""
	}
	f, ok := markerFacts(c, p)
	if !ok || f.Token != tok {
		return ""
	}
	if !pinsign.VerifyMarker(r.PinKey, f, p.Annotations[render.AnnotationMarkerSignature]) {
		return ""
	}
	return tok
}

// signMarker writes the operator's signature onto pod p, which it has just created as
// the member of the step status records for it. A pod without a UID (not read back from
// the API server) or a cluster without a key gets none.
func (r *Reconciler) signMarker(ctx context.Context, c *etcdv1beta2.EtcdCluster, p *corev1.Pod) error {
	f, ok := markerFacts(c, p)
	if !ok || p.Annotations[render.AnnotationRecoveryToken] != f.Token {
		return nil
	}
	sig := pinsign.SignMarker(r.PinKey, f)
	if sig == "" {
		return fmt.Errorf("pod %s: no signature could be made for its %s marker (no key, or no pod UID)", p.Name, f.Step)
	}
	// A merge patch naming the pod's UID: the signature lands on this very pod or nowhere
	// (the API server refuses a patch that would change the UID). No resourceVersion: the
	// scheduler and the kubelet change the pod right after its create.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": p.UID, "annotations": map[string]string{render.AnnotationMarkerSignature: sig}}})
	if err != nil {
		return err
	}
	if err := r.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("sign the %s marker of pod %s: %w", f.Step, p.Name, err)
	}
	return nil
}

// markerKeyMissing is why a step that needs a signed marker cannot start: without the
// key no marker could later be told from a tenant's copy, so the step is refused rather
// than run on unsigned markers.
func (r *Reconciler) markerKeyMissing() string {
	if len(r.PinKey) > 0 {
		return ""
	}
	return "the operator has no signing key (Secret " + pinkey.SecretName + " in its namespace, see its log), so it could never prove the new member's pod is its own; nothing is created or deleted"
}

// refusedError is a planned step the controller refuses to take; its message becomes
// the cluster's status.reason for as long as the step stays planned.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// refuseUnsignable refuses a step that would need a signed marker, with a warning event
// (once, when nothing of the step was recorded yet) and the reason in status.
func (r *Reconciler) refuseUnsignable(c *etcdv1beta2.EtcdCluster, first bool, step, why string) error {
	msg := step + " refused: " + why
	if first {
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonMarkerKeyMissing, msg)
	}
	return &refusedError{msg: msg}
}

// freshenMarkedPod re-reads from the API server the pod of the step status records when
// the cached copy carries the step's token but no signature that verifies: the cache may
// show the pod's create before the signature written right after it, and an operator's
// own member must not be taken for a tenant's copy (the record would be forgotten and its
// pod left running).
func (r *Reconciler) freshenMarkedPod(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) error {
	for i := range pods {
		p := &pods[i]
		f, ok := stepOfRecord(c, p.Name)
		if !ok || p.Annotations[render.AnnotationRecoveryToken] != f.Token || r.verifiedMarker(c, p) != "" {
			continue
		}
		var fresh corev1.Pod
		if err := r.freshReader().Get(ctx, client.ObjectKeyFromObject(p), &fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		*p = fresh
	}
	return nil
}
