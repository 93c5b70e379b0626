package etcdcluster

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// observe with no pod to dial reads the API server only: the cluster's own pods (not a
// stranger's under its labels), its claims, its nodes, and what status recorded; there
// is no etcd client and the members are unknown.
func TestObserveWithoutEtcd(t *testing.T) {
	ready := ownedMemberPod("c-a", "uid-c")
	ready.Spec.NodeName = "n-up"
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	ready.Annotations = map[string]string{render.AnnotationMemberID: etcdadmin.FormatID(1), render.AnnotationVersion: "3.7.3"}
	crashed := ownedMemberPod("c-b", "uid-c")
	crashed.Spec.NodeName = "n-down"
	crashed.Status.PodIP = "10.0.0.2" // addressable, but etcd is known not to run: not dialled
	crashed.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	deleting := memberClaim("c-z", "uid-c")
	deleting.DeletionTimestamp = &metav1.Time{Time: proofNow}
	deleting.Finalizers = []string{"kubernetes.io/pvc-protection"}
	node := func(name string, status corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	}
	f := newProofFixture(t, withClaims, ready, crashed, ownedMemberPod("c-stranger", "uid-other"),
		memberClaim("c-a", "uid-c"), memberClaim("c-b", "uid-c"), memberClaim("c-stranger", ""), deleting,
		node("n-up", corev1.ConditionTrue), node("n-down", corev1.ConditionFalse))
	f.setStatus(t, func(s *etcdv1beta2.EtcdClusterStatus) {
		s.Bootstrapped = true
		s.BootstrapMembers = []string{"c-a", "c-b", "c-c"}
		s.Members.Ready = []string{"c-a"}
		s.Members.Unready = []string{"c-b", "c-c"}
		s.PendingMember = &etcdv1beta2.PendingMember{Name: "c-c", ID: etcdadmin.FormatID(3), AddedAt: metav1.NewTime(proofNow.Add(-time.Minute))}
	})

	o, err := f.r.observe(context.Background(), f.cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if o.admin != nil || o.members != nil || o.planner.MembersKnown {
		t.Errorf("admin %v, members %v, known %v; want no etcd client and members unknown", o.admin, o.members, o.planner.MembersKnown)
	}
	if len(o.pods) != 2 || o.pods["c-a"] == nil || o.pods["c-b"] == nil {
		t.Errorf("own pods %v, want c-a and c-b", o.pods)
	}
	p := o.planner
	if !p.Now.Equal(proofNow) || !p.Bootstrapped || p.NameSeed != "uid-c" || !reflect.DeepEqual(p.BootstrapMembers, []string{"c-a", "c-b", "c-c"}) {
		t.Errorf("recorded state: now %v, bootstrapped %v, seed %q, bootstrap members %v", p.Now, p.Bootstrapped, p.NameSeed, p.BootstrapMembers)
	}
	if p.Pending == nil || p.Pending.Name != "c-c" || p.Pending.ID != 3 {
		t.Errorf("pending %+v, want the recorded learner", p.Pending)
	}
	if !reflect.DeepEqual(p.Claims, []string{"c-a", "c-b"}) || !reflect.DeepEqual(p.KnownMembers, []string{"c-a", "c-b", "c-c"}) {
		t.Errorf("claims %v, known members %v", p.Claims, p.KnownMembers)
	}
	if len(p.Pods) != 2 {
		t.Fatalf("planner pods %+v", p.Pods)
	}
	a, b := p.Pods[0], p.Pods[1]
	if a.Name != "c-a" || a.MemberID != 1 || !a.Ready || a.NodeNotReady || a.Version != "3.7.3" || !a.UnhealthySince.IsZero() {
		t.Errorf("pod c-a %+v", a)
	}
	if b.Name != "c-b" || b.Ready || !b.NodeNotReady || !b.CrashLooping || b.EtcdRunning || !b.UnhealthySince.Equal(proofNow) {
		t.Errorf("pod c-b %+v", b)
	}
}

// What status recorded reaches the planner; a recovery underway outranks a pending
// learner, and a pending record whose ID cannot be read is none.
func TestRecordedState(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{UID: "uid-c"}}
	c.Status.PendingMember = &etcdv1beta2.PendingMember{Name: "c-d", ID: "not hex"}
	if got := recordedState(c, proofNow); got.Pending != nil || got.NameSeed != "uid-c" || !got.Now.Equal(proofNow) {
		t.Errorf("unreadable pending: %+v", got)
	}
	c.Status.PendingMember.ID = etcdadmin.FormatID(4)
	c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Source: "c-a", SourceID: etcdadmin.FormatID(1), Revision: 42, Member: "c-n",
		Token: "tok", StartedAt: metav1.NewTime(proofNow)}
	got := recordedState(c, proofNow)
	want := &planner.Recovery{Source: "c-a", SourceID: 1, Revision: 42, Member: "c-n", StartedAt: proofNow, Token: "tok"}
	if got.Pending != nil || !reflect.DeepEqual(got.Recovery, want) {
		t.Errorf("recovery %+v, pending %+v; want %+v and no pending", got.Recovery, got.Pending, want)
	}
}

// TestQuorumLossGrace: the annotation is read overflow-safely, and a grace so short that
// a blip (an election, a restart, a node briefly unreachable) would count as a lasting
// quorum loss is raised to the floor, with a warning; what cannot be read falls back to
// the planner's default, with a warning.
func TestQuorumLossGrace(t *testing.T) {
	const floor = DefaultMinQuorumLossGrace
	for _, tc := range []struct {
		value    string // "-" for no annotation
		want     time.Duration
		warnings []string // substrings of the warning; none: no warning
	}{
		{"-", 0, nil},
		{"90s", 90 * time.Second, nil},
		{"1m", time.Minute, nil},
		{"2000000h", 2000000 * time.Hour, nil},
		{"15s", floor, []string{AnnotationQuorumLossGrace, `"15s"`, "below the minimum 1m0s", "using 1m0s"}},
		{"1ns", floor, []string{"below the minimum"}},
		{"100000000h", 0, []string{`"100000000h"`, "not a positive duration", "default 5m0s"}},
		{"9223372036854775808ns", 0, []string{"not a positive duration"}},
		{"abc", 0, []string{"not a positive duration"}},
		{"", 0, []string{"not a positive duration"}},
		{"-5s", 0, []string{"not a positive duration"}},
		{"0s", 0, []string{"not a positive duration"}},
	} {
		c := newTestCluster()
		if tc.value != "-" {
			c.Annotations = map[string]string{AnnotationQuorumLossGrace: tc.value}
		}
		got, warning := quorumLossGrace(c, floor)
		if got != tc.want {
			t.Errorf("%q: grace %v, want %v", tc.value, got, tc.want)
		}
		if len(tc.warnings) == 0 && warning != "" {
			t.Errorf("%q: warning %q, want none", tc.value, warning)
		}
		for _, w := range tc.warnings {
			if !strings.Contains(warning, w) {
				t.Errorf("%q: warning %q does not say %q", tc.value, warning, w)
			}
		}
		if d := desiredFromSpec(c, floor).QuorumLossGrace; d != tc.want {
			t.Errorf("%q: planner grace %v, want %v", tc.value, d, tc.want)
		}
	}
	// The operator's own floor (lower on the test bench) is what applies.
	c := newTestCluster()
	c.Annotations = map[string]string{AnnotationQuorumLossGrace: "15s"}
	if d := desiredFromSpec(c, 10*time.Second).QuorumLossGrace; d != 15*time.Second {
		t.Errorf("floor 10s: grace %v, want 15s", d)
	}
}

func newTestCluster() *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
}
