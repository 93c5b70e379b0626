package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The operator signs the marker of a recovery's new member right after creating its pod,
// over the pod's UID; the signature verifies for that pod and that record only.
func TestRecoveryMemberIsSignedAfterCreate(t *testing.T) {
	src := ownedMemberPod("c-a", "uid-c")
	src.Status.PodIP = "10.0.0.1"
	// The scheduler and the kubelet change a pod right after its create (the bench
	// showed a patch conditioned on the created resourceVersion refused): so here.
	f := newProofFixtureWith(t, interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if err := cl.Create(ctx, obj, opts...); err != nil {
			return err
		}
		if p, ok := obj.(*corev1.Pod); ok {
			moved := p.DeepCopy()
			moved.Spec.NodeName = "node-1"
			return cl.Update(ctx, moved)
		}
		return nil
	}}, nil, src)
	if _, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), forceNewCluster); err != nil {
		t.Fatal(err)
	}
	c := stored(t, f.c)
	p := f.pod(t, "c-n")
	if p.UID == "" || p.Annotations[render.AnnotationMarkerSignature] == "" {
		t.Fatalf("new member's pod: uid %q, annotations %v; want a signed marker", p.UID, p.Annotations)
	}
	if got := f.r.verifiedMarker(c, p); got != c.Status.Recovery.Token {
		t.Errorf("verified marker %q, want the recovery's token", got)
	}
	// The same annotations on a pod re-created under the name (another UID) are not the
	// operator's.
	again := p.DeepCopy()
	again.UID = "uid-recreated"
	if got := f.r.verifiedMarker(c, again); got != "" {
		t.Errorf("a re-created pod's copied marker verified (%q)", got)
	}
	// Nor is a restore's record naming the same pod and token.
	asRestore := c.DeepCopy()
	asRestore.Status.BackupRestore = &etcdv1beta2.BackupRestoreStatus{Member: "c-n", Token: c.Status.Recovery.Token, StartedAt: c.Status.Recovery.StartedAt}
	asRestore.Status.Recovery = nil
	if got := f.r.verifiedMarker(asRestore, p); got != "" {
		t.Errorf("a recovery's marker verified for a restore (%q)", got)
	}
}

// Without its key the operator refuses a quorum-loss recovery and a total-loss restore:
// nothing is recorded or created, the reason is in a warning event and in the error that
// becomes status.reason.
func TestStepsNeedingAMarkerRefuseWithoutKey(t *testing.T) {
	for _, a := range []planner.Action{forceNewCluster, {Kind: planner.RestoreFromBackup, Name: "c-n", Version: "3.7.3"}} {
		t.Run(a.Kind.String(), func(t *testing.T) {
			src := ownedMemberPod("c-a", "uid-c")
			src.Status.PodIP = "10.0.0.1"
			f := newProofFixture(t, nil, src)
			f.r.PinKey = nil
			_, err := f.r.act(context.Background(), f.cluster, f.observed(t, "c-a"), a)
			if err == nil || !strings.Contains(err.Error(), "no signing key") {
				t.Fatalf("err %v, want a refusal naming the missing key", err)
			}
			if st := stored(t, f.c).Status; st.Recovery != nil || st.BackupRestore != nil {
				t.Errorf("recorded %+v / %+v without a key", st.Recovery, st.BackupRestore)
			}
			if f.exists(t, &corev1.Pod{}, "c-n") {
				t.Error("created the new member's pod without a key")
			}
			f.sawEvent(t, corev1.EventTypeWarning, etcdv1beta2.ReasonMarkerKeyMissing)
		})
	}
}

// What a tenant who may create pods and write */status can make: a recovery record, and
// pods with the member labels, the cluster's ownerReference and the record's token. None
// of it is the operator's, so nothing is deleted, however long the reconciles go on.
func TestForgedRecoveryMarkersDeleteNothing(t *testing.T) {
	start := proofNow.Add(-time.Hour) // long past RecoveryTimeout: an abort is due if the record were believed
	rec := &etcdv1beta2.RecoveryStatus{Source: "c-aaaaaaa1", SourceID: "1", Revision: 1, Token: "tok", StartedAt: metav1.NewTime(start)}
	members := func() []client.Object {
		var objs []client.Object
		for _, n := range []string{"c-aaaaaaa1", "c-aaaaaaa2", "c-aaaaaaa3"} {
			p := ownedMemberPod(n, "uid-c")
			p.Status.PodIP = "127.250.0." + n[len(n)-1:]
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
			objs = append(objs, p, memberClaim(n, "uid-c"))
		}
		return objs
	}
	wrongKey := func(p *corev1.Pod) {
		f := pinsign.MarkerFacts{ClusterUID: "uid-c", Pod: p.Name, PodUID: string(p.UID), Step: pinsign.StepRecovery, Token: "tok", StartedAt: start.Unix()}
		p.Annotations[render.AnnotationMarkerSignature] = pinsign.SignMarker([]byte(strings.Repeat("k", 32)), f)
	}
	for _, tc := range []struct {
		name   string
		member string
		extra  func() *corev1.Pod // a tenant's pod, or nil
		mark   func(*corev1.Pod)  // what the tenant adds to the marked pod
	}{
		{name: "a forged token on a real member", member: "c-aaaaaaa2"},
		{name: "a forged token and a signature under another key on a real member", member: "c-aaaaaaa2", mark: wrongKey},
		{name: "a tenant pod with the ownerReference, labels and token", member: "c-forged00", extra: func() *corev1.Pod {
			p := ownedMemberPod("c-forged00", "uid-c")
			p.Status.Phase = corev1.PodRunning
			return p
		}},
		{name: "a tenant pod with a signature copied from another pod", member: "c-forged00", extra: func() *corev1.Pod {
			return ownedMemberPod("c-forged00", "uid-c")
		}, mark: func(p *corev1.Pod) {
			f := pinsign.MarkerFacts{ClusterUID: "uid-c", Pod: p.Name, PodUID: "uid-of-the-operators-pod", Step: pinsign.StepRecovery, Token: "tok", StartedAt: start.Unix()}
			p.Annotations[render.AnnotationMarkerSignature] = pinsign.SignMarker(testPinKey, f)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := members()
			if tc.extra != nil {
				objs = append(objs, tc.extra())
			}
			for _, o := range objs {
				if p, ok := o.(*corev1.Pod); ok && p.Name == tc.member {
					p.Annotations = map[string]string{render.AnnotationRecoveryToken: "tok"}
					if tc.mark != nil {
						tc.mark(p)
					}
				}
			}
			f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
				c.Annotations = map[string]string{AnnotationForceNewCluster: "true"}
			}, objs...)
			forged := *rec
			forged.Member = tc.member
			f.setStatus(t, func(st *etcdv1beta2.EtcdClusterStatus) {
				st.Bootstrapped = true
				st.Recovery = &forged
			})
			before := strings.Join(f.podNames(t), ",")
			for range 3 {
				f.reconcileOnce(t)
			}
			if after := strings.Join(f.podNames(t), ","); after != before {
				t.Errorf("pods %s became %s", before, after)
			}
			for _, d := range f.deletes {
				t.Errorf("deleted %s %s", d.kind, d.name)
			}
			if st := stored(t, f.c).Status; st.Recovery != nil {
				t.Errorf("the forged record is still believed: %+v", st.Recovery)
			}
		})
	}
}

// A tenant's pod answering as the recovery's new member (its own one-member cluster, at
// a revision above the record's) is never taken for it: the planner, given what the
// operator observes, finishes nothing, so the old members' pods and claims stay.
func TestTenantRecoveryMemberNeverFinishes(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c",
		Annotations: map[string]string{AnnotationForceNewCluster: "true"}}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"}}
	c.Status.Bootstrapped = true
	c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Source: "c-a", SourceID: "1", Revision: 5, Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
	tenant := ownedMemberPod("c-n", "uid-c")
	tenant.Annotations = map[string]string{render.AnnotationRecoveryToken: "tok"}
	tenant.Status.PodIP, tenant.Status.Phase = "10.0.0.9", corev1.PodRunning
	genuine := tenant.DeepCopy()
	signedFor(t, c, genuine)

	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		wantFinish bool
	}{
		{"the tenant's pod", tenant, false},
		{"the operator's signed pod", genuine, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{PinKey: testPinKey}
			all := []corev1.Pod{*ownedMemberPod("c-a", "uid-c"), *ownedMemberPod("c-b", "uid-c"), *ownedMemberPod("c-c", "uid-c"), *tc.pod}
			o := &observation{planner: recordedState(c, proofNow), pods: ownPods(c, all)}
			ans := etcdAnswers{
				statuses: []etcdadmin.EndpointStatus{{Endpoint: "http://10.0.0.9:2379", ClusterID: 77, MemberID: 9, Leader: 9, Revision: 50, Version: "3.7.3"}},
				members:  []etcdadmin.Member{{ID: 9, Name: "c-n", PeerURLs: []string{"http://c-n.c.ns.svc:2380"}}},
			}
			j := joiner{health: newHealthTracker(), key: "ns/c", now: proofNow, nodeReady: func(string) bool { return true },
				marker: func(p *corev1.Pod) string { return r.verifiedMarker(c, p) }}
			j.join(o, ans, map[string]string{"c-n": "http://10.0.0.9:2379"})
			a := planner.Plan(desiredFromSpec(c, 0), o.planner)
			if finished := a.Kind == planner.FinishRecovery; finished != tc.wantFinish {
				t.Fatalf("planned %v; want FinishRecovery: %v", a, tc.wantFinish)
			}
			if !tc.wantFinish && (a.DeletePod || a.Kind != planner.AbortRecovery || a.Reason != etcdv1beta2.ReasonRecoveryRecordInvalid) {
				t.Errorf("planned %v; want the record forgotten, nothing deleted", a)
			}
		})
	}
}
