package etcdcluster

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// A member is dialled at its pod IP without TLS, in brackets when the IP is IPv6, and at
// its DNS name with TLS (the name its server certificate carries).
func TestMemberEndpoint(t *testing.T) {
	pod := func(ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "main-0001", Namespace: "team-a"}, Status: corev1.PodStatus{PodIP: ip}}
	}
	plain := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "team-a"}}
	withTLS := plain.DeepCopy()
	withTLS.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{ServerSecret: "s"}}}
	for _, tc := range []struct {
		c    *etcdv1beta2.EtcdCluster
		ip   string
		want string
	}{
		{plain, "10.0.0.1", "http://10.0.0.1:2379"},
		{plain, "fd00:10:244::5", "http://[fd00:10:244::5]:2379"},
		{withTLS, "fd00:10:244::5", "https://main-0001.main.team-a.svc.cluster.local:2379"},
	} {
		r := &Reconciler{ClusterDomain: "cluster.local"}
		if got := r.memberEndpoint(tc.c, pod(tc.ip)); got != tc.want {
			t.Errorf("memberEndpoint(TLS %v, %s) = %q, want %q", tc.c.Spec.TLS != nil, tc.ip, got, tc.want)
		}
	}
}

// Only own pods whose etcd may serve are dialled: not one being deleted, without an
// address, or whose etcd the kubelet reports not running; during a recovery borne out
// by its marked pod, only the recovery's new member.
func TestDialTargets(t *testing.T) {
	pod := func(name, ip string) *corev1.Pod {
		p := ownedMemberPod(name, "uid-c")
		p.Status.PodIP = ip
		return p
	}
	deleting := pod("c-d", "10.0.0.4")
	deleting.DeletionTimestamp = &metav1.Time{Time: proofNow}
	stopped := pod("c-e", "10.0.0.5")
	stopped.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c"}}
	c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
	marked := pod("c-n", "10.0.0.9")
	marked.UID = "uid-n"
	signedFor(t, c, marked)
	c.Status.Recovery = nil
	all := []corev1.Pod{*pod("c-b", "10.0.0.2"), *pod("c-a", "10.0.0.1"), *pod("c-c", ""), *deleting, *stopped, *marked}

	r := &Reconciler{PinKey: testPinKey}
	eps, ofPod := r.dialTargets(c, ownPods(c, all), r.recoveryUnderway(c, all))
	want := []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.9:2379"}
	if !reflect.DeepEqual(eps, want) || len(ofPod) != 3 || ofPod["c-a"] != want[0] || ofPod["c-n"] != want[2] {
		t.Errorf("endpoints %v, of pod %v; want %v", eps, ofPod, want)
	}

	c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
	if !r.recoveryUnderway(c, all) {
		t.Fatal("recovery with its marked pod not seen underway")
	}
	eps, _ = r.dialTargets(c, ownPods(c, all), true)
	if !reflect.DeepEqual(eps, want[2:]) {
		t.Errorf("during the recovery: endpoints %v, want only the new member's", eps)
	}
	for _, rec := range []*etcdv1beta2.RecoveryStatus{
		{Member: "c-n", Token: "another", StartedAt: metav1.NewTime(proofNow)},               // the pod is not this recovery's
		{Member: "c-n", StartedAt: metav1.NewTime(proofNow)},                                 // no token recorded
		{Member: "c-x", Token: "tok", StartedAt: metav1.NewTime(proofNow)},                   // its pod does not exist
		{Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow.Add(-time.Minute))}, // another start: a replayed or forged record
	} {
		c.Status.Recovery = rec
		if r.recoveryUnderway(c, all) {
			t.Errorf("recovery %+v seen underway", rec)
		}
	}
	// The marker and the record without the operator's signature: a tenant's copy.
	c.Status.Recovery = &etcdv1beta2.RecoveryStatus{Member: "c-n", Token: "tok", StartedAt: metav1.NewTime(proofNow)}
	forged := all[len(all)-1].DeepCopy()
	delete(forged.Annotations, render.AnnotationMarkerSignature)
	if r.recoveryUnderway(c, append(all[:len(all)-1:len(all)-1], *forged)) {
		t.Error("a marker without the operator's signature taken for a recovery underway")
	}
	if (&Reconciler{}).recoveryUnderway(c, all) {
		t.Error("without a key, a marker was trusted")
	}
}
