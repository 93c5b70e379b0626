package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
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
