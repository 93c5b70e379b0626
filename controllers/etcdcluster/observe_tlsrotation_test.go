package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
)

// The rotation proof reads the Secrets the member pods mount and the spec's, and
// refuses, naming the Secret, what does not verify; with nothing pending it reads none.
func TestProveTLSRotation(t *testing.T) {
	ca, foreignCA := testpki.NewCA(t, "ca"), testpki.NewCA(t, "foreign")
	names := []string{"*.rot.default.svc"}
	secret := func(name string, data map[string][]byte) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
	}
	peer := func(name string, ca *testpki.CA) client.Object {
		cert, _ := ca.Issue(t, name, names, nil)
		return secret(name, map[string][]byte{peerCertKey: cert, peerCAKey: ca.PEM})
	}
	server := func(name string, ca *testpki.CA) client.Object {
		cert, _ := ca.Issue(t, name, names, nil)
		return secret(name, map[string][]byte{serverCertKey: cert, serverCAKey: ca.PEM})
	}
	opCert, _ := ca.Issue(t, "op", nil, nil)
	objs := []client.Object{
		peer("peer-1", ca), peer("peer-2", ca), peer("peer-foreign", foreignCA),
		server("server-1", ca), server("server-2", ca), server("server-foreign", foreignCA),
		secret("op", map[string][]byte{etcdadmin.ClientCertKey: opCert, etcdadmin.ClientCAKey: ca.PEM}),
	}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(objs...).Build()}
	running := statusCluster("rot", "3.6.16")
	running.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member: &etcdv1beta2.MemberSecret{PeerSecret: "peer-1", ServerSecret: "server-1"}, OperatorSecret: "op"}}
	pods := map[string]*corev1.Pod{}
	for _, n := range []string{"rot-a", "rot-b"} {
		pods[n] = memberPod(t, running, n, corev1.PodStatus{})
	}
	for _, tc := range []struct {
		name         string
		peer, server string
		want         string // "" proven
	}{
		{"nothing pending", "peer-1", "server-1", ""},
		{"renewed by the same CA", "peer-2", "server-2", ""},
		{"peer from another CA", "peer-foreign", "server-1", `secret "peer-foreign" (peer.crt) does not verify against the CA bundle of secret "peer-1" (peer-ca.crt)`},
		{"server from another CA", "peer-1", "server-foreign", `secret "server-foreign" (server.crt) does not verify against the CA bundle of secret "server-1"`},
		{"missing Secret", "peer-gone", "server-1", `secret "peer-gone"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := running.DeepCopy()
			c.Spec.TLS.Static.Member.PeerSecret, c.Spec.TLS.Static.Member.ServerSecret = tc.peer, tc.server
			got := r.proveTLSRotation(context.Background(), c, pods, time.Now())
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("proof %q, want %q", got, tc.want)
			}
		})
	}
	// A scheme change needs no proof (the planner refuses it), so nothing is read.
	plain := statusCluster("rot", "3.6.16")
	if got := r.proveTLSRotation(context.Background(), plain, pods, time.Now()); got != "" {
		t.Errorf("TLS off judged as a rotation: %q", got)
	}
}
