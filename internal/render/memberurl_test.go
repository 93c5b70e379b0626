package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestMemberClientURL(t *testing.T) {
	pod := func(ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "main-0001", Namespace: "team-a"}, Status: corev1.PodStatus{PodIP: ip}}
	}
	plain := &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "team-a"}}
	withTLS := plain.DeepCopy()
	withTLS.Spec.TLS = &v1beta2.TLSPolicy{Static: &v1beta2.StaticTLS{Member: &v1beta2.MemberSecret{ServerSecret: "s"}}}
	for _, tc := range []struct {
		c    *v1beta2.EtcdCluster
		ip   string
		want string
	}{
		{plain, "10.0.0.1", "http://10.0.0.1:2379"},
		{plain, "fd00:10:244::5", "http://[fd00:10:244::5]:2379"},
		{withTLS, "fd00:10:244::5", "https://main-0001.main.team-a.svc.cluster.local:2379"},
	} {
		if got := MemberClientURL(tc.c, pod(tc.ip), "cluster.local"); got != tc.want {
			t.Errorf("MemberClientURL(TLS %v, %s) = %q, want %q", tc.c.Spec.TLS != nil, tc.ip, got, tc.want)
		}
	}
}

// One scheme for every dialled pod: https only once the spec has client TLS and every
// pod serves TLS clients (mounts the server Secret), whatever the spec says of the rest.
func TestDialTLS(t *testing.T) {
	plain := &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "team-a"}}
	withTLS := plain.DeepCopy()
	withTLS.Spec.TLS = &v1beta2.TLSPolicy{Static: &v1beta2.StaticTLS{Member: &v1beta2.MemberSecret{PeerSecret: "p", ServerSecret: "s"}}}
	pod := func(name string, serverTLS bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
		if serverTLS {
			p.Spec.Volumes = []corev1.Volume{{Name: ServerTLSVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}
		return p
	}
	tlsPod, plainPod := pod("main-0001", true), pod("main-0002", false)
	if !ServesTLSClients(tlsPod) || ServesTLSClients(plainPod) {
		t.Errorf("ServesTLSClients: with the volume %v, without %v", ServesTLSClients(tlsPod), ServesTLSClients(plainPod))
	}
	for _, tc := range []struct {
		name string
		c    *v1beta2.EtcdCluster
		pods []*corev1.Pod
		want bool
	}{
		{"TLS spec, every pod serves TLS", withTLS, []*corev1.Pod{tlsPod}, true},
		{"TLS spec, a pod still plaintext (turning TLS on)", withTLS, []*corev1.Pod{tlsPod, plainPod}, false},
		{"plaintext spec, pods on TLS (TLS off refused)", plain, []*corev1.Pod{tlsPod}, false},
		{"TLS spec, no pod", withTLS, nil, true},
	} {
		if got := DialTLS(tc.c, tc.pods); got != tc.want {
			t.Errorf("%s: DialTLS = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, want := MemberDialURL(withTLS, plainPod, "cluster.local", false), "http://10.0.0.1:2379"; got != want {
		t.Errorf("MemberDialURL over http = %s, want %s", got, want)
	}
	if got, want := MemberDialURL(plain, tlsPod, "cluster.local", true), "https://main-0001.main.team-a.svc.cluster.local:2379"; got != want {
		t.Errorf("MemberDialURL over https = %s, want %s", got, want)
	}
}
