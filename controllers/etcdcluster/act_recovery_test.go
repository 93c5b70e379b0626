package etcdcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// setStatus stores the cluster's status as set changes it, as an earlier reconcile
// would have written it, and reads the cluster back.
func (f *proofFixture) setStatus(t *testing.T, set func(*etcdv1beta2.EtcdClusterStatus)) {
	t.Helper()
	set(&f.cluster.Status)
	if err := f.c.Status().Update(context.Background(), f.cluster); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.cluster), f.cluster); err != nil {
		t.Fatal(err)
	}
}

var forceNewCluster = planner.Action{Kind: planner.ForceNewCluster, Name: "c-a", From: 1, Revision: 42, Version: "3.7.3",
	Members: []planner.NewMember{{Name: "c-n"}}, Message: "quorum lost for 10m"}

// ForceNewCluster records the recovery before the new member's pod exists, so a
// restarted operator continues this recovery rather than starting another; the pod is
// marked with the recovery's token and bootstraps a cluster of its own.
func TestStartRecoveryRecordsBeforeThePod(t *testing.T) {
	var creates []creation
	src := ownedMemberPod("c-a", "uid-c")
	src.Status.PodIP = "10.0.0.1"
	f := newProofFixtureWith(t, recordCreates(&creates), nil, src)
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), forceNewCluster); err != nil {
		t.Fatal(err)
	}
	rec := stored(t, f.c).Status.Recovery
	if rec == nil || rec.Source != "c-a" || rec.SourceID != etcdadmin.FormatID(1) || rec.Revision != 42 || rec.Member != "c-n" ||
		!strings.HasPrefix(rec.Token, render.ClusterToken(f.cluster)+"-r") {
		t.Fatalf("recorded recovery %+v", rec)
	}
	for _, cr := range creates {
		if cr.stored.Recovery == nil {
			t.Errorf("%s %s created before the recovery was recorded", cr.kind, cr.name)
		}
	}
	p := f.pod(t, "c-n")
	if p.Annotations[render.AnnotationRecoveryToken] != rec.Token {
		t.Errorf("new member's pod marked %q, want the recovery's token", p.Annotations[render.AnnotationRecoveryToken])
	}
	if s, ic := etcdFlag(p, "initial-cluster-state"), etcdFlag(p, "initial-cluster"); s != render.StateNew || ic != "c-n=http://c-n.c.ns.svc:2380" {
		t.Errorf("new member: state %s, initial cluster %s; want a cluster of its own", s, ic)
	}
	f.sawEvent(t, corev1.EventTypeWarning, etcdv1beta2.EventReasonForceNewCluster)

	// Repeated, the same recovery goes on: same token, no second warning.
	f.cluster = stored(t, f.c)
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a", "c-n"), forceNewCluster); err != nil {
		t.Fatal(err)
	}
	if again := stored(t, f.c).Status.Recovery; again == nil || again.Token != rec.Token {
		t.Errorf("repeated: recovery %+v, want the first one kept", again)
	}
	f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPodCreated)
	select {
	case e := <-f.rec.Events:
		if strings.Contains(e, etcdv1beta2.EventReasonForceNewCluster) {
			t.Errorf("repeated: warned again: %q", e)
		}
	default:
	}
}

// A source pod without an address stops the step after the record, before any pod.
func TestStartRecoveryNeedsTheSourcesAddress(t *testing.T) {
	f := newProofFixture(t, nil, ownedMemberPod("c-a", "uid-c"))
	_, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), forceNewCluster)
	if err == nil || !strings.Contains(err.Error(), "source pod c-a has no IP") {
		t.Fatalf("err %v", err)
	}
	if stored(t, f.c).Status.Recovery == nil {
		t.Error("recovery not recorded")
	}
	if f.exists(t, &corev1.Pod{}, "c-n") {
		t.Error("new member's pod created without a source to copy")
	}
}

// FinishRecovery deletes the old members' pods and claims, unmarks the new member's
// pod and forgets the recovery.
func TestFinishRecovery(t *testing.T) {
	fresh := ownedMemberPod("c-n", "uid-c")
	fresh.Annotations = map[string]string{render.AnnotationRecoveryToken: "tok"}
	f := newProofFixture(t, withClaims, ownedMemberPod("c-a", "uid-c"), memberClaim("c-a", "uid-c"),
		ownedMemberPod("c-b", "uid-c"), memberClaim("c-b", "uid-c"), fresh, memberClaim("c-n", "uid-c"))
	f.setStatus(t, func(s *etcdv1beta2.EtcdClusterStatus) {
		s.Recovery = &etcdv1beta2.RecoveryStatus{Source: "c-a", Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
		s.PendingMember = &etcdv1beta2.PendingMember{Name: "c-x", ID: "9"}
	})
	a := planner.Action{Kind: planner.FinishRecovery, Message: "c-n serves revision 42"}
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a", "c-b", "c-n"), a); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.podNames(t), ","); got != "c-n" {
		t.Errorf("pods %s, want only the new member's", got)
	}
	for _, n := range []string{"c-a", "c-b"} {
		if f.exists(t, &corev1.PersistentVolumeClaim{}, n) {
			t.Errorf("old member %s's claim kept", n)
		}
	}
	if _, marked := f.pod(t, "c-n").Annotations[render.AnnotationRecoveryToken]; marked {
		t.Error("new member's pod still carries the recovery marker")
	}
	if st := stored(t, f.c).Status; st.Recovery != nil || st.PendingMember != nil {
		t.Errorf("stored recovery %+v, pending %+v; want both cleared", st.Recovery, st.PendingMember)
	}
	if e := f.sawEvent(t, corev1.EventTypeNormal, etcdv1beta2.EventReasonRecovered); !strings.Contains(e, "[c-a c-b]") {
		t.Errorf("event %q does not name the deleted pods", e)
	}
}

// AbortRecovery forgets the recovery, and deletes its new member's pod only when the
// plan says the pod is that recovery's.
func TestAbortRecovery(t *testing.T) {
	for _, deletePod := range []bool{true, false} {
		fresh := ownedMemberPod("c-n", "uid-c")
		fresh.Annotations = map[string]string{render.AnnotationRecoveryToken: "tok"}
		f := newProofFixture(t, nil, ownedMemberPod("c-a", "uid-c"), fresh)
		f.setStatus(t, func(s *etcdv1beta2.EtcdClusterStatus) {
			s.Recovery = &etcdv1beta2.RecoveryStatus{Source: "c-a", Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
		})
		a := planner.Action{Kind: planner.AbortRecovery, Name: "c-n", DeletePod: deletePod,
			Reason: etcdv1beta2.ReasonRecoveryAborted, Message: "opt-in withdrawn"}
		if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a", "c-n"), a); err != nil {
			t.Fatal(err)
		}
		if got := f.exists(t, &corev1.Pod{}, "c-n"); got == deletePod {
			t.Errorf("delete pod %v: new member's pod exists %v", deletePod, got)
		}
		if !f.exists(t, &corev1.Pod{}, "c-a") {
			t.Errorf("delete pod %v: an old member's pod was deleted", deletePod)
		}
		if rec := stored(t, f.c).Status.Recovery; rec != nil {
			t.Errorf("delete pod %v: stored recovery %+v, want none", deletePod, rec)
		}
		f.sawEvent(t, corev1.EventTypeWarning, etcdv1beta2.ReasonRecoveryAborted)
	}
}
