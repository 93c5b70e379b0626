package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The steps here change etcd's membership through the observation's etcd client; the
// end-to-end suites cover them against a live cluster.

// addLearner executes AddLearner: the member is added as a learner, recorded as pending,
// and only then gets its claim and pod.
func (r *Reconciler) addLearner(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	base := r.baseFor(c, o, a)                              // act_asrunning.go
	peerScheme, plain := tlsRender(base.cluster, o, a.Name) // act_tlsenable.go
	res, err := admin.EnsureLearner(etcdadmin.WithoutRetryOn(ctx, etcdadmin.ErrUnhealthyCluster), []string{peerURLFor(base, o, a.Name)})
	if err != nil {
		return asEtcdWait(fmt.Errorf("add learner %s: %w", a.Name, err), etcdadmin.ErrUnhealthyCluster)
	}
	// Persist the in-flight step before starting the pod: a restarted operator must
	// finish this learner rather than add another.
	c.Status.PendingMember = &etcdv1beta2.PendingMember{Name: a.Name, ID: idString(res.Member.ID), AddedAt: metav1.NewTime(r.Now())}
	if err := o.status.checkpoint(ctx); err != nil {
		return err
	}
	m := render.Member{Name: a.Name, ID: idString(res.Member.ID), Version: a.Version, PeerScheme: peerScheme, ClientPlaintext: plain,
		InitialClusterState: render.StateExisting, InitialCluster: initialClusterOf(base, res.Members, a.Name, peerScheme)}
	if err := r.createMembersFrom(ctx, c, base, []render.Member{m}); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberAdded, "added learner %s (%s)%s", a.Name, idString(res.Member.ID), base.note(c))
	log.FromContext(ctx).WithValues("action", a.Kind.String()).Info("learner added", "member", a.Name, "id", idString(res.Member.ID))
	return nil
}

// promoteLearner executes PromoteLearner; the learner is no longer pending.
func (r *Reconciler) promoteLearner(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	if _, err := admin.EnsurePromoted(etcdadmin.WithoutRetryOn(ctx, etcdadmin.ErrLearnerNotReady), a.ID); err != nil {
		return asEtcdWait(fmt.Errorf("promote %s: %w", a.Name, err), etcdadmin.ErrLearnerNotReady)
	}
	c.Status.PendingMember = nil
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPromoted, "promoted learner %s (%s) to voting member", a.Name, idString(a.ID))
	return nil
}

// moveLeader executes MoveLeader.
func (r *Reconciler) moveLeader(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	if err := admin.MoveLeader(ctx, a.To); err != nil {
		return fmt.Errorf("move leader to %s: %w", idString(a.To), err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonLeaderMoved, "moved leadership from %s to %s: %s", idString(a.From), idString(a.To), a.Message)
	return nil
}

// removeMember executes RemoveMember and ReplaceMember: the member leaves etcd, then,
// when the plan says so, its pod and claim go.
func (r *Reconciler) removeMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	// etcd refuses to remove a voter while fewer of the others than a quorum have been
	// connected for 5 s (a member promoted or restarted just before): that clears on its
	// own, so the reconcile requeues instead of retrying inside the call (etcdWait).
	if _, err := admin.EnsureRemoved(etcdadmin.WithoutRetryOn(ctx, etcdadmin.ErrUnhealthyCluster), a.ID); err != nil {
		return asEtcdWait(fmt.Errorf("remove member %s: %w", a.Name, err), etcdadmin.ErrUnhealthyCluster)
	}
	if a.DeletePod && a.Name != "" {
		if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
			return err
		}
	}
	reason := etcdv1beta2.EventReasonMemberRemoved
	if a.Kind == planner.ReplaceMember {
		reason = etcdv1beta2.EventReasonMemberReplaced
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, reason, "removed member %s (%s): %s", a.Name, idString(a.ID), a.Message)
	return nil
}

// initialClusterOf is --initial-cluster for a member joining an existing cluster: etcd
// requires it to list every current member (learners and unstarted ones too) by the
// peer URL the membership has for it, which is not the spec's scheme while TLS is being
// turned on. self is listed with selfScheme ("" for base's) under base's domain.
func initialClusterOf(base podBase, members []etcdadmin.Member, self, selfScheme string) string {
	c := base.cluster
	urls := map[string]string{}
	for _, m := range members {
		n := m.Name
		if n == "" {
			n = memberNameFromPeerURLs(m.PeerURLs)
		}
		if n != "" && n != self && urls[n] == "" {
			urls[n] = render.PeerURL(c, n, base.domain)
			if len(m.PeerURLs) > 0 {
				urls[n] = m.PeerURLs[0]
			}
		}
	}
	if selfScheme == "" {
		selfScheme = render.PeerScheme(c)
	}
	urls[self] = render.PeerURLWithScheme(c, self, base.domain, selfScheme)
	names := make([]string, 0, len(urls))
	for n := range urls {
		names = append(names, n)
	}
	slices.Sort(names)
	entries := make([]string, len(names))
	for i, n := range names {
		entries[i] = n + "=" + urls[n]
	}
	return strings.Join(entries, ",")
}
