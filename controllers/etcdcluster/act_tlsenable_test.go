package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// transitionPod renders member name of c as turning TLS on renders it (m's PeerScheme
// and ClientPlaintext), with a pod IP.
func transitionPod(t *testing.T, c *etcdv1beta2.EtcdCluster, name, peerScheme string, plain bool) *corev1.Pod {
	t.Helper()
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	m := render.Member{Name: name, InitialClusterState: render.StateExisting, PeerScheme: peerScheme, ClientPlaintext: plain}
	m.InitialCluster = name + "=" + render.PeerURLWithScheme(c, name, "", map[string]string{"": render.PeerScheme(c)}[peerScheme]+peerScheme)
	objs, err := rd.Render(render.Input{Cluster: c, Members: []render.Member{m}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			p.Status.PodIP = "10.0.0.1"
			return p
		}
	}
	t.Fatal("no pod rendered")
	return nil
}

func tlsSpec(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster {
	c = c.DeepCopy()
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member: &etcdv1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"}, OperatorSecret: "op"}}
	return c
}

// What a pod runs is read off its arguments and volumes, and the operator dials one
// scheme every dialled pod serves.
func TestTLSTransitionFacts(t *testing.T) {
	plainC := statusCluster("tt", "3.6.16")
	tlsC := tlsSpec(plainC)
	plain := transitionPod(t, plainC, "tt-a", "", false)
	step1 := transitionPod(t, tlsC, "tt-b", "http", true)
	step2 := transitionPod(t, tlsC, "tt-c", "https", true)
	final := transitionPod(t, tlsC, "tt-d", "", false)
	for _, tc := range []struct {
		name                      string
		p                         *corev1.Pod
		peerTLS, plain, tlsClient bool
	}{
		{"plaintext", plain, false, true, false},
		{"step 1", step1, false, true, true},
		{"step 2", step2, true, true, true},
		{"TLS", final, true, false, true},
	} {
		if got := peerServesTLS(tc.p); got != tc.peerTLS {
			t.Errorf("%s: peerServesTLS %v", tc.name, got)
		}
		if got := servesPlaintextClients(tc.p); got != tc.plain {
			t.Errorf("%s: servesPlaintextClients %v", tc.name, got)
		}
		if got := render.ServesTLSClients(tc.p); got != tc.tlsClient {
			t.Errorf("%s: servesTLSClients %v", tc.name, got)
		}
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{"step 1 under way: http", []*corev1.Pod{plain, step1}, false},
		{"step 2: everyone serves both, https", []*corev1.Pod{step1, step2}, true},
		{"step 3 under way: https", []*corev1.Pod{step2, final}, true},
	} {
		if got := render.DialTLS(tlsC, tc.pods); got != tc.want {
			t.Errorf("%s: dialTLS %v", tc.name, got)
		}
	}
	if render.DialTLS(plainC, []*corev1.Pod{final}) {
		t.Error("a plaintext spec dialled over https")
	}
	// A pod running etcd from a shell command line (CoreOS's), and one whose flags
	// cannot be found: judged on what they show, never as mid-way.
	coreos := final.DeepCopy()
	coreos.Spec.Containers[0].Command = []string{"/bin/sh", "-ec", "/usr/local/bin/etcd " + strings.Join(final.Spec.Containers[0].Args, " ")}
	coreos.Spec.Containers[0].Args = nil
	bare := final.DeepCopy()
	bare.Spec.Containers[0].Args = nil
	for _, p := range []*corev1.Pod{coreos, bare} {
		if !peerServesTLS(p) || servesPlaintextClients(p) {
			t.Errorf("TLS pod judged: peer TLS %v, plaintext clients %v", peerServesTLS(p), servesPlaintextClients(p))
		}
	}
}

// A new pod during the transition takes the scheme etcd has for its member, and serves
// plaintext clients until the last step.
func TestTLSRender(t *testing.T) {
	plainC := statusCluster("tt", "3.6.16")
	c := tlsSpec(plainC)
	member := func(name, scheme string) planner.Member {
		return planner.Member{Name: name, PeerURLs: []string{scheme + "://" + name + ":2380"}}
	}
	obs := func(members []planner.Member, pods ...*corev1.Pod) *observation {
		o := &observation{pods: map[string]*corev1.Pod{}}
		o.planner.Members = members
		for _, p := range pods {
			o.pods[p.Name] = p
		}
		return o
	}
	for _, tc := range []struct {
		name       string
		o          *observation
		member     string
		wantScheme string
		wantPlain  bool
	}{
		{"step 1: a plaintext member restarted", obs([]planner.Member{member("tt-a", "http"), member("tt-b", "http")},
			transitionPod(t, plainC, "tt-b", "", false)), "tt-a", "http", true},
		{"step 2: a member whose URL was updated", obs([]planner.Member{member("tt-a", "https"), member("tt-b", "http")},
			transitionPod(t, c, "tt-b", "http", true)), "tt-a", "https", true},
		{"step 2: the last member, the others on https peers", obs([]planner.Member{member("tt-a", "https"), member("tt-b", "https")},
			transitionPod(t, c, "tt-b", "https", true)), "tt-a", "https", false},
		{"step 3", obs([]planner.Member{member("tt-a", "https"), member("tt-b", "https")},
			transitionPod(t, c, "tt-b", "https", true)), "tt-a", "https", false},
		{"TLS cluster: a member recreated", obs([]planner.Member{member("tt-a", "https"), member("tt-b", "https")},
			transitionPod(t, c, "tt-b", "", false)), "tt-a", "https", false},
		{"a learner added while some pod cannot dial https peers", obs([]planner.Member{member("tt-b", "http")},
			transitionPod(t, plainC, "tt-b", "", false)), "tt-new", "http", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme, plain := tlsRender(c, tc.o, tc.member)
			if scheme != tc.wantScheme || plain != tc.wantPlain {
				t.Errorf("tlsRender = %q, %v; want %q, %v", scheme, plain, tc.wantScheme, tc.wantPlain)
			}
		})
	}
	if s, p := tlsRender(plainC, obs(nil), "tt-a"); s != "" || p {
		t.Errorf("plaintext spec: %q %v", s, p)
	}
}
