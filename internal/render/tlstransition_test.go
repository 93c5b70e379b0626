package render

import (
	"testing"
)

// A member of a plaintext cluster moving to TLS: peer certificates configured while it
// still listens for peers over http, and plaintext clients served beside TLS ones on
// the one client port.
func TestRenderTLSTransitionMember(t *testing.T) {
	c := tlsCluster("peer", "server")
	host := MemberHost(c, "tls-a", "")
	for _, tc := range []struct {
		name                          string
		m                             Member
		listenPeer, advertisePeer     string
		listenClient, advertiseClient string
	}{
		{"step 1: http peers with certificates, clients both ways",
			Member{PeerScheme: "http", ClientPlaintext: true},
			"http://0.0.0.0:2380", "http://" + host + ":2380",
			"http://0.0.0.0:2379,https://0.0.0.0:2379", "http://" + host + ":2379,https://" + host + ":2379"},
		{"step 2: https peers, clients both ways",
			Member{PeerScheme: "https", ClientPlaintext: true},
			"https://0.0.0.0:2380", "https://" + host + ":2380",
			"http://0.0.0.0:2379,https://0.0.0.0:2379", "http://" + host + ":2379,https://" + host + ":2379"},
		{"done: the spec's",
			Member{},
			"https://0.0.0.0:2380", "https://" + host + ":2380",
			"https://0.0.0.0:2379", "https://" + host + ":2379"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			m.Name, m.InitialClusterState = "tls-a", StateExisting
			m.InitialCluster = "tls-a=" + PeerURLWithScheme(c, "tls-a", "", m.peerScheme(c))
			r := mustRender(t, Input{Cluster: c, Members: []Member{m}})
			args := etcdContainer(t, r.pods["tls-a"]).Args
			for f, want := range map[string]string{
				"listen-peer-urls": tc.listenPeer, "initial-advertise-peer-urls": tc.advertisePeer,
				"listen-client-urls": tc.listenClient, "advertise-client-urls": tc.advertiseClient,
				"peer-cert-file": "/etc/etcd/peer/peer.crt", "cert-file": "/etc/etcd/server/server.crt",
			} {
				if got, _ := flag(t, args, f); got != want {
					t.Errorf("--%s=%q, want %q", f, got, want)
				}
			}
		})
	}
}

// Without client TLS there is nothing to serve plaintext beside: ClientPlaintext is
// ignored. A member's own entry must carry its own scheme.
func TestRenderTLSTransitionChecks(t *testing.T) {
	c := tlsCluster("", "")
	m := Member{Name: "tls-a", InitialClusterState: StateExisting, ClientPlaintext: true}
	m.InitialCluster = InitialClusterEntry(c, "tls-a", "")
	r := mustRender(t, Input{Cluster: c, Members: []Member{m}})
	if got, _ := flag(t, etcdContainer(t, r.pods["tls-a"]).Args, "listen-client-urls"); got != "http://0.0.0.0:2379" {
		t.Errorf("plaintext cluster: --listen-client-urls=%q", got)
	}
	tc := tlsCluster("peer", "server")
	m = Member{Name: "tls-a", InitialClusterState: StateExisting, PeerScheme: "http", InitialCluster: InitialClusterEntry(tc, "tls-a", "")}
	if _, err := sharedRenderer.Render(Input{Cluster: tc, Members: []Member{m}}); err == nil {
		t.Error("an http member with an https entry in --initial-cluster rendered")
	}
	m.PeerScheme, m.InitialCluster = "ftp", "tls-a=ftp://x:2380"
	if _, err := sharedRenderer.Render(Input{Cluster: tc, Members: []Member{m}}); err == nil {
		t.Error("peer scheme ftp rendered")
	}
}
