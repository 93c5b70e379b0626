package etcdbackup

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func TestClusterOfEndpoints(t *testing.T) {
	scope := namespaceClusters{Namespace: "team-a", PodIPs: map[string][]string{
		"main":     {"10.0.0.1", "10.0.0.2", "fd00:10:244::1"},
		"other":    {"10.0.0.9"},
		"a":        nil, // a cluster named like another's client Service below
		"a-client": {"10.0.1.1"},
		"empty":    nil,
	}}
	cases := []struct {
		name      string
		endpoints []string
		want      string // "" = refused
		mention   string // the refusal names this
	}{
		{"client service, CoreOS short form", []string{"http://main-client:2379"}, "main", ""},
		{"client service, bare host:port", []string{"main-client:2379"}, "main", ""},
		{"client service with namespace", []string{"http://main-client.team-a:2379"}, "main", ""},
		{"client service FQDN", []string{"https://main-client.team-a.svc:2379"}, "main", ""},
		{"client service FQDN with domain", []string{"https://main-client.team-a.svc.cluster.local:2379"}, "main", ""},
		{"trailing dot, upper case", []string{"http://MAIN-client.team-a.svc.cluster.local.:2379"}, "main", ""},
		{"headless service", []string{"http://main.team-a.svc:2379"}, "main", ""},
		{"member names", []string{"http://main-0001.main.team-a.svc:2379", "http://main-0002.main.team-a.svc.cluster.local:2379"}, "main", ""},
		{"member short name", []string{"http://main-0001.main:2379"}, "main", ""},
		{"member pod IPs", []string{"http://10.0.0.1:2379", "10.0.0.2:2379"}, "main", ""},
		{"member pod IPv6", []string{"http://[fd00:10:244::1]:2379", "[fd00:10:244:0::1]:2379", "fd00:10:244::1"}, "main", ""},
		// Without brackets the port reads as part of the address: another IP.
		{"member pod IPv6 without brackets", []string{"fd00:10:244::1:2379"}, "", "not a member pod"},
		{"cluster without pods still named", []string{"http://empty-client:2379"}, "empty", ""},

		{"another namespace's client service", []string{"http://main-client.team-b.svc:2379"}, "", "spec.etcdEndpoints"},
		{"another namespace's member", []string{"http://main-0001.main.team-b.svc.cluster.local:2379"}, "", "team-a"},
		{"another namespace under our namespace's name as a domain", []string{"http://main-client.team-b.svc.team-a.svc:2379"}, "", "spec.etcdEndpoints"},
		{"namespace label in the wrong place", []string{"http://main-client.svc.team-a:2379"}, "", "spec.etcdEndpoints"},
		{"unknown cluster", []string{"http://nothing-client.team-a.svc:2379"}, "", "does not name"},
		{"kubernetes API", []string{"https://kubernetes.default.svc:443"}, "", "spec.etcdEndpoints"},
		{"IP of no member pod", []string{"http://127.0.0.1:1"}, "", "not a member pod"},
		{"node or external IP", []string{"http://10.0.0.3:2379"}, "", "not a member pod"},
		{"external name", []string{"https://etcd.example.com:2379"}, "", "spec.etcdEndpoints"},
		{"two clusters", []string{"http://main-client:2379", "http://other-client:2379"}, "", "two clusters"},
		{"one good, one foreign", []string{"http://main-client:2379", "http://main-client.team-b.svc:2379"}, "", "team-b"},
		{"ambiguous service name", []string{"http://a-client:2379"}, "", "clusterRef"},
		{"unix socket", []string{"unix:///var/run/etcd.sock"}, "", "scheme"},
		{"credentials in the URL", []string{"http://user:pw@main-client:2379"}, "", "credentials"},
		{"empty", nil, "", "empty"},
		{"empty host", []string{"http://:2379"}, "", "no host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := clusterOfEndpoints(c.endpoints, scope)
			if c.want != "" {
				if err != nil || got != c.want {
					t.Errorf("got %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as cluster %q; want refused", got)
			}
			if !strings.Contains(err.Error(), c.mention) || !strings.Contains(err.Error(), "spec.") {
				t.Errorf("error %q should name the field and mention %q", err, c.mention)
			}
		})
	}
}

// While a plaintext cluster moves to TLS (or turning TLS on is refused), a backup dials
// the members over http, which every one of them serves, as the cluster controller
// does; once every member serves TLS clients, over https with the operator's client
// certificate.
func TestBackupDialsTheSchemeTheMembersServe(t *testing.T) {
	withServerTLS := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: render.ServerTLSVolume,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "server"}}})
		return p
	}
	for _, tc := range []struct {
		name          string
		serverTLS     []bool // per member pod: it mounts the server Secret
		wantEndpoints string
		wantTLSDir    bool
		auto          bool // built-in issuing (spec.TLS.auto) rather than static Secrets
	}{
		{"no member serves TLS yet (step 1 starts, or refused)", []bool{false, false},
			"http://10.0.0.1:2379,http://10.0.0.2:2379", false, false},
		{"step 1 half-way", []bool{true, false},
			"http://10.0.0.1:2379,http://10.0.0.2:2379", false, false},
		{"every member serves TLS clients", []bool{true, true},
			"https://main-0001.main.dial.svc.cluster.local:2379,https://main-0002.main.dial.svc.cluster.local:2379", true, false},
		{"built-in issuing, every member serving TLS clients", []bool{true, true},
			"https://main-0001.main.dial.svc.cluster.local:2379,https://main-0002.main.dial.svc.cluster.local:2379", true, true},
		{"built-in issuing, a plaintext cluster moving to it", []bool{false, true},
			"http://10.0.0.1:2379,http://10.0.0.2:2379", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "dial", UID: "main-uid"},
				Spec: etcdv1beta2.EtcdClusterSpec{TLS: &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
					Member: &etcdv1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"}, OperatorSecret: "op"}}}}
			if tc.auto {
				c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
			}
			objs := []client.Object{c}
			for i, tls := range tc.serverTLS {
				p := memberPodOf(c, fmt.Sprintf("main-%04d", i+1), fmt.Sprintf("10.0.0.%d", i+1))
				if tls {
					p = withServerTLS(p)
				}
				objs = append(objs, p)
			}
			h := newHarness(t, pvcBackup("dial", 0), objs...)
			h.r.ClusterDomain = "cluster.local"
			h.reconcile()
			var endpoints string
			tlsDir := false
			for _, a := range h.mustPod().Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--endpoints="); ok {
					endpoints = v
				}
				tlsDir = tlsDir || strings.HasPrefix(a, "--tls-dir=")
			}
			if endpoints != tc.wantEndpoints || tlsDir != tc.wantTLSDir {
				t.Errorf("backup pod dials %s (client certificate %v); want %s (%v)", endpoints, tlsDir, tc.wantEndpoints, tc.wantTLSDir)
			}
			if tc.auto && tc.wantTLSDir {
				mounted := false
				for _, v := range h.mustPod().Spec.Volumes {
					mounted = mounted || (v.Secret != nil && v.Secret.SecretName == "main-builtin-tls-client")
				}
				if !mounted {
					t.Errorf("backup pod of a cluster with built-in issuing does not mount main-builtin-tls-client: %+v", h.mustPod().Spec.Volumes)
				}
			}
		})
	}
}
