package etcdcluster

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Hibernation through the reconciler against a fake API server (no etcd: the member pods
// have no IP, so no member list is ever read, as once every pod has stopped): size 0 stops
// the pods one at a time and keeps the claims and status's record; an operator restarted
// while hibernated keeps it so; size 3 brings the same members back on the same claims.
func TestReconcileHibernatesAndResumes(t *testing.T) {
	c := claimCluster("1Gi")
	c.Name, c.UID = "hib", "uid-hib"
	c.Spec.Size = 0
	members := []string{"hib-a", "hib-b", "hib-c"}
	c.Status.Bootstrapped = true
	c.Status.Phase = etcdv1beta2.ClusterPhaseRunning
	c.Status.Members.Ready = members
	c.Status.CurrentVersion = c.Spec.Version // 3.6.16, what the members ran when they last answered
	objs := []client.Object{c}
	for i, m := range members {
		c.Status.Members.Details = append(c.Status.Members.Details, etcdv1beta2.MemberDetail{Name: m, ID: []string{"a1", "b2", "c3"}[i]})
		objs = append(objs, memberPod(t, c, m, corev1.PodStatus{Phase: corev1.PodRunning}), sizedClaim(c, m, "", "1Gi", c.UID))
	}
	f := newClusterFixture(t, nil, objs...)
	ctx := context.Background()
	pods := func() []string {
		var l corev1.PodList
		if err := f.c.List(ctx, &l, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		return names
	}
	claims := func() map[string]string {
		var l corev1.PersistentVolumeClaimList
		if err := f.c.List(ctx, &l, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		uids := map[string]string{}
		for _, p := range l.Items {
			uids[p.Name] = string(p.UID)
		}
		return uids
	}
	claimsBefore := claims()
	if len(claimsBefore) != 3 {
		t.Fatalf("fixture claims %v", claimsBefore)
	}

	// Stopping: one pod per reconcile, then Hibernated.
	for i := 0; i < 3; i++ {
		f.reconcile(t, c.Name)
		if got := pods(); len(got) != 2-i {
			t.Fatalf("after %d reconciles pods %v", i+1, got)
		}
	}
	f.now = f.now.Add(time.Second)
	f.reconcile(t, c.Name)
	got := f.cluster(t, c.Name)
	if got.Status.Phase != etcdv1beta2.ClusterPhaseHibernated || got.Status.Reason != etcdv1beta2.ReasonHibernated || got.Status.Size != 0 {
		t.Errorf("status phase %q reason %q size %d, want Hibernated, Hibernated, 0", got.Status.Phase, got.Status.Reason, got.Status.Size)
	}
	wantClusterCondition(t, got, etcdv1beta2.ClusterConditionAvailable, corev1.ConditionFalse, etcdv1beta2.ReasonHibernated, "hib-a, hib-b, hib-c")
	wantClusterCondition(t, got, etcdv1beta2.ClusterConditionScaling, corev1.ConditionFalse, etcdv1beta2.ReasonHibernated)
	wantClusterCondition(t, got, etcdv1beta2.ClusterConditionRecovering, corev1.ConditionFalse, etcdv1beta2.ReasonNothingToRepair)
	if !slices.Equal(got.Status.Members.Unready, members) || len(got.Status.Members.Ready) != 0 {
		t.Errorf("members ready %v unready %v, want the three recorded as unready", got.Status.Members.Ready, got.Status.Members.Unready)
	}
	if len(got.Status.Members.Details) != 3 || got.Status.Members.Details[1].ID != "b2" {
		t.Errorf("member details (IDs) not kept: %+v", got.Status.Members.Details)
	}
	if now := claims(); !maps.Equal(now, claimsBefore) {
		t.Errorf("claims changed: %v, were %v", now, claimsBefore)
	}
	for _, e := range f.events() {
		if strings.HasPrefix(e, corev1.EventTypeWarning) {
			t.Errorf("warning while hibernating: %s", e)
		}
	}
	if v := testutil.ToFloat64(clusterHibernated.WithLabelValues("default", c.Name)); v != 1 {
		t.Errorf("etcd_operator_cluster_hibernated = %v, want 1", v)
	}

	// An operator restarted while hibernated: the same, from status and claims alone.
	f.r = newTestClusterReconciler(t, f.c, f.rec, func() time.Time { return f.now })
	f.now = f.now.Add(time.Minute)
	f.reconcile(t, c.Name)
	if got := f.cluster(t, c.Name); got.Status.Phase != etcdv1beta2.ClusterPhaseHibernated || len(pods()) != 0 {
		t.Errorf("after a restart: phase %q, pods %v", got.Status.Phase, pods())
	}

	// Resume: the recorded members come back, by name, on their claims.
	cur := f.cluster(t, c.Name)
	cur.Spec.Size = 3
	cur.Spec.Version = "3.7.3" // changed while hibernated: the members come back on 3.6.16 first
	if err := f.c.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		f.reconcile(t, c.Name)
	}
	if got := pods(); !slices.Equal(got, members) {
		t.Errorf("pods after resume %v, want %v", got, members)
	}
	for _, m := range members {
		var p corev1.Pod
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: m}, &p); err != nil {
			t.Fatal(err)
		}
		if v := p.Annotations[render.AnnotationVersion]; v != "3.6.16" {
			t.Errorf("pod %s resumed on %q, want 3.6.16 (the version recorded; the upgrade rule upgrades afterwards)", m, v)
		}
	}
	if now := claims(); !maps.Equal(now, claimsBefore) {
		t.Errorf("claims after resume %v, were %v (new claims would mean new, empty members)", now, claimsBefore)
	}
	got = f.cluster(t, c.Name)
	if got.Status.Phase == etcdv1beta2.ClusterPhaseHibernated {
		t.Errorf("still Hibernated at size 3")
	}
	if v := testutil.ToFloat64(clusterHibernated.WithLabelValues("default", c.Name)); v != 0 {
		t.Errorf("etcd_operator_cluster_hibernated = %v after resume, want 0", v)
	}
}

// Size 0 on a cluster without claims (stored before admission refused it) stops nothing
// and says why.
func TestReconcileRefusesHibernationWithoutClaims(t *testing.T) {
	c := statusCluster("noclaims", "3.6.16")
	c.Spec.Size = 0
	c.Status.Bootstrapped = true
	c.Status.Members.Ready = []string{"noclaims-a"}
	f := newClusterFixture(t, nil, c, memberPod(t, c, "noclaims-a", corev1.PodStatus{Phase: corev1.PodRunning}))
	f.reconcile(t, c.Name)
	var l corev1.PodList
	if err := f.c.List(context.Background(), &l, client.InNamespace("default")); err != nil || len(l.Items) != 1 {
		t.Fatalf("pods %d (%v), want the one pod untouched", len(l.Items), err)
	}
	got := f.cluster(t, c.Name)
	if got.Status.Reason != etcdv1beta2.ReasonInvalidSpec || got.Status.Phase == etcdv1beta2.ClusterPhaseHibernated {
		t.Errorf("phase %q reason %q, want InvalidSpec and not Hibernated", got.Status.Phase, got.Status.Reason)
	}
}
