package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// startRecovery executes ForceNewCluster: record the recovery (once), then create the new
// member's pod, whose init step copies the survivor's data (a snapshot streams without
// quorum) and which bootstraps a one-member cluster under a token of its own. Nothing of
// the old cluster is touched here.
func (r *Reconciler) startRecovery(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	if len(a.Members) != 1 {
		return fmt.Errorf("force new cluster: %d new members planned, want 1", len(a.Members))
	}
	rec := c.Status.Recovery
	if why := r.markerKeyMissing(); why != "" {
		return r.refuseUnsignable(c, rec == nil, "quorum-loss recovery", why)
	}
	if rec == nil {
		now := r.Now()
		rec = &etcdv1beta2.RecoveryStatus{
			Source: a.Name, SourceID: idString(a.From), Revision: a.Revision, Member: a.Members[0].Name,
			// A token no old member has: none of them can ever join the new cluster.
			Token:     render.ClusterToken(c) + "-r" + strconv.FormatInt(now.Unix(), 36),
			StartedAt: metav1.NewTime(now),
		}
		// Recorded before the pod exists: a restarted operator continues this very
		// recovery (same source, member and token) instead of starting another.
		c.Status.Recovery = rec
		c.Status.PendingMember = nil
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
		r.Recorder.Eventf(c, corev1.EventTypeWarning, etcdv1beta2.EventReasonForceNewCluster,
			"%s; the old members are removed only once %s serves", a.Message, rec.Member)
	}
	src := o.pods[rec.Source]
	if src == nil || src.Status.PodIP == "" {
		return fmt.Errorf("force new cluster: source pod %s has no IP", rec.Source)
	}
	m := render.Member{
		Name: rec.Member, Version: a.Version, InitialClusterState: render.StateNew,
		InitialCluster: render.InitialCluster(c, []string{rec.Member}, r.ClusterDomain),
		Recovery: &render.Recovery{SourceURL: r.memberEndpoint(c, src), MinRevision: rec.Revision,
			Token: rec.Token, Image: r.OperatorImage},
	}
	if err := r.createMembers(ctx, c, []render.Member{m}); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPodCreated,
		"created pod %s, which copies the data of %s (revision >= %d)", rec.Member, rec.Source, rec.Revision)
	return nil
}

// finishRecovery executes FinishRecovery: the new member serves the survivor's data, so
// the old members' pods (and claims) go, and the recovery is forgotten. The pods are
// deleted before the record is cleared: until then only the new member is dialled, and an
// operator restarted in between repeats the deletions rather than observing both clusters.
func (r *Reconciler) finishRecovery(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	rec := c.Status.Recovery
	if rec == nil {
		return nil
	}
	var old []string
	for name := range o.pods {
		if name != rec.Member {
			old = append(old, name)
		}
	}
	sort.Strings(old)
	for _, n := range old {
		if err := r.deleteMember(ctx, c, o, n); err != nil {
			return err
		}
	}
	// The new member is now the cluster's; without its marker, a recovery record
	// naming it can never again be taken for one in progress.
	if err := r.unmarkRecovery(ctx, c, rec.Member); err != nil {
		return err
	}
	c.Status.Recovery = nil
	c.Status.PendingMember = nil
	if err := o.status.checkpoint(ctx); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonRecovered, "%s; deleted pods [%s]; growing back to %d members",
		a.Message, strings.Join(old, " "), c.Spec.Size)
	return nil
}

// abortRecovery executes AbortRecovery: the recovery is forgotten, with a warning, and
// its new member's pod goes only when the plan says it is that recovery's.
func (r *Reconciler) abortRecovery(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	if c.Status.Recovery != nil {
		// Only the planner's word that the pod is this recovery's (it carries the
		// recovery's marker) lets it go; the record alone never does.
		if a.DeletePod && a.Name == c.Status.Recovery.Member {
			if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
				return err
			}
		}
		c.Status.Recovery = nil
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
	}
	r.Recorder.Event(c, corev1.EventTypeWarning, a.Reason, a.Message)
	return nil
}

// unmarkRecovery removes the recovery marker from the pod of a recovery's new member.
func (r *Reconciler) unmarkRecovery(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) error {
	var pod corev1.Pod
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, ok := pod.Annotations[render.AnnotationRecoveryToken]; !ok || !metav1.IsControlledBy(&pod, c) {
		return nil
	}
	orig := pod.DeepCopy()
	delete(pod.Annotations, render.AnnotationRecoveryToken)
	delete(pod.Annotations, render.AnnotationMarkerSignature)
	if err := r.Patch(ctx, &pod, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("unmark recovered member %s: %w", name, err)
	}
	return nil
}
