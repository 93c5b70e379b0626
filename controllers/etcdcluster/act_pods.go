package etcdcluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The steps here change only Kubernetes objects (member pods and their claims); etcd's
// membership is left as it is.

// createPod executes CreatePod: the pod (and claim) of a member that has none. A member
// of an interrupted bootstrap starts as part of the recorded initial cluster; any other
// joins the existing one. While the spec's TLS or domain change is refused or held
// (a.AsRunning) it runs as the other members do (act_asrunning.go).
func (r *Reconciler) createPod(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	base := r.baseFor(c, o, a)
	peerScheme, plain := tlsRender(base.cluster, o, a.Name) // act_tlsenable.go
	m := render.Member{Name: a.Name, ID: idString(a.ID), Version: a.Version, PeerScheme: peerScheme, ClientPlaintext: plain,
		InitialClusterState: render.StateExisting, InitialCluster: initialClusterOf(base, o.members, a.Name, peerScheme)}
	if !c.Status.Bootstrapped && slices.Contains(c.Status.BootstrapMembers, a.Name) {
		m.InitialClusterState = render.StateNew
		m.InitialCluster = render.InitialCluster(base.cluster, c.Status.BootstrapMembers, base.domain)
		m.PeerScheme, m.ClientPlaintext = "", false // a new cluster starts on the spec
	}
	if err := r.createMembersFrom(ctx, c, base, []render.Member{m}); err != nil {
		return err
	}
	if a.Reason == etcdv1beta2.ReasonRecreatingPod {
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonPodRecreated, "%s%s", a.Message, base.note(c))
	} else {
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPodCreated, "created pod for member %s%s", a.Name, base.note(c))
	}
	return nil
}

// deletePod executes DeletePod, with or without the member's claim.
func (r *Reconciler) deletePod(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	if a.KeepClaim {
		// The member restarts on its claim under a new pod of the same name.
		if err := r.deleteOwned(ctx, c, &corev1.Pod{}, a.Name, observedUID(o, a.Name)); err != nil {
			return err
		}
	} else if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
		return err
	}
	reason := etcdv1beta2.EventReasonPodDeleted
	if a.Reason == etcdv1beta2.ReasonCorrectingBootstrap {
		reason = etcdv1beta2.EventReasonBootstrapPodCorrected
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, reason, "deleted pod %s: %s", a.Name, a.Message)
	return nil
}

// upgradeMember executes UpgradeMember: one member restarts on the new version.
func (r *Reconciler) upgradeMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, a planner.Action) error {
	if err := r.setMemberImage(ctx, c, a.Name, a.Version); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberUpgrading, "restarting member %s on etcd %s", a.Name, a.Version)
	return nil
}

// fixPodImage executes FixPodImage: a pod of a bootstrap stuck on a version that cannot
// run gets the spec's version in place, keeping its name.
func (r *Reconciler) fixPodImage(ctx context.Context, c *etcdv1beta2.EtcdCluster, a planner.Action) error {
	if err := r.setMemberImage(ctx, c, a.Name, a.Version); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonBootstrapPodCorrected, "%s", a.Message)
	return nil
}

// createMembers creates the PVCs and pods the chart renders for members from the spec;
// existing ones are left as they are.
func (r *Reconciler) createMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, members []render.Member) error {
	return r.createMembersFrom(ctx, c, r.specBase(c), members)
}

// createMembersFrom is createMembers rendering from base (act_asrunning.go); the objects
// are owned by c, and each pod's fingerprint records what it was rendered from, so a
// pod rendered as the members run still shows the spec's change as pending.
func (r *Reconciler) createMembersFrom(ctx context.Context, c *etcdv1beta2.EtcdCluster, base podBase, members []render.Member) error {
	restore, err := r.restoreStep(ctx, c, members)
	if err != nil {
		return err
	}
	objs, err := r.renderer.Render(render.Input{Cluster: base.cluster, ClusterDomain: base.domain, Members: members, Restore: restore})
	if err != nil {
		return fmt.Errorf("render member pods: %w", err)
	}
	recoveryToken := map[string]string{}
	for _, m := range members {
		if m.Recovery != nil {
			recoveryToken[m.Name] = m.Recovery.Token
		} else if m.Token != "" { // a total-loss restore's member carries its token too
			recoveryToken[m.Name] = m.Token
		}
	}
	// PVCs first: a pod referencing a missing claim would not schedule.
	for _, kindPass := range []func(client.Object) bool{isPVC, isPod} {
		for _, obj := range objs {
			if !kindPass(obj) {
				continue
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				markRecovery(pod, recoveryToken[pod.Name])
			}
			if err := controllerutil.SetControllerReference(c, obj, r.Scheme); err != nil {
				return err
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				stampSpecFingerprint(pod, base.cluster, base.domain)
			}
			err := r.Create(ctx, obj)
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
			} else if err != nil && isPVC(obj) {
				if err := r.claimNotGoing(ctx, obj); err != nil {
					return err
				}
			}
			// A recovery's or restore's member is signed as the operator's once it
			// exists (act_marker.go). A pod that was there already is not: whoever made
			// it, the operator cannot tell it is the one it created.
			if pod, ok := obj.(*corev1.Pod); ok && err == nil && recoveryToken[pod.Name] != "" {
				if err := r.signMarker(ctx, c, pod); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// claimNotGoing fails while the existing claim of obj's name is being deleted: a pod
// created on it would never start (the claim stays until no pod uses it), so the pod
// waits for the claim to go and be created again.
func (r *Reconciler) claimNotGoing(ctx context.Context, obj client.Object) error {
	var cur corev1.PersistentVolumeClaim
	if err := r.freshReader().Get(ctx, client.ObjectKeyFromObject(obj), &cur); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("claim %s went while it was created; trying again", obj.GetName())
		}
		return fmt.Errorf("get claim %s: %w", obj.GetName(), err)
	}
	if cur.DeletionTimestamp != nil {
		return fmt.Errorf("claim %s is being deleted; its pod is created once it is gone", obj.GetName())
	}
	return nil
}

// markRecovery puts the recovery marker on the new member's pod of a quorum-loss
// recovery and makes sure no other pod carries one (spec.pod.annotations could).
func markRecovery(pod *corev1.Pod, token string) {
	delete(pod.Annotations, render.AnnotationRecoveryToken)
	delete(pod.Annotations, render.AnnotationMarkerSignature) // only the operator signs, after the create
	if token == "" {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[render.AnnotationRecoveryToken] = token
}

func isPVC(o client.Object) bool { _, ok := o.(*corev1.PersistentVolumeClaim); return ok }
func isPod(o client.Object) bool { _, ok := o.(*corev1.Pod); return ok }

// setMemberImage changes the image of one member's etcd container in place. The kubelet
// restarts the container on the same pod and volume, so the member keeps its data and ID;
// etcd hands leadership off on SIGTERM.
func (r *Reconciler) setMemberImage(ctx context.Context, c *etcdv1beta2.EtcdCluster, name, version string) error {
	var pod corev1.Pod
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &pod); err != nil {
		return fmt.Errorf("get pod %s: %w", name, err)
	}
	if !metav1.IsControlledBy(&pod, c) {
		why := fmt.Sprintf("pod %s/%s is not controlled by EtcdCluster %s; not changing its image", c.Namespace, name, c.Name)
		r.Recorder.Event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonDeletionRefused, why)
		return &notControlledError{msg: why}
	}
	image := render.Image(c.Spec, version)
	orig := pod.DeepCopy()
	changed := false
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == render.ContainerName && pod.Spec.Containers[i].Image != image {
			pod.Spec.Containers[i].Image = image
			changed = true
		}
	}
	if pod.Annotations[render.AnnotationVersion] != version {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[render.AnnotationVersion] = version
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.Patch(ctx, &pod, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("set image of %s to %s: %w", name, image, err)
	}
	return nil
}
