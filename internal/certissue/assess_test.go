package certissue

import (
	"strings"
	"testing"
	"time"
)

func TestAssess(t *testing.T) {
	st := Settings{CertificateLifetime: 60 * 24 * time.Hour, CALifetime: 365 * 24 * time.Hour}.WithDefaults()
	s, _ := NewState("db", st, t0)
	l, _ := IssueLeaves(s, names(), st, t0)
	other, _ := NewState("db", st, t0)
	hosts := []string{"db-a.db.ns.svc.cluster.local"}
	good := []InUse{
		{Kind: KindPeer, Secret: "p", CertKey: "peer.crt", CAKey: "peer-ca.crt", Cert: l.Peer.CertPEM, Bundle: l.Trust, Hosts: hosts},
		{Kind: KindServer, Secret: "s", CertKey: "server.crt", CAKey: "server-ca.crt", Cert: l.Server.CertPEM, Bundle: l.Trust, Hosts: hosts},
		{Kind: KindClient, Secret: "c", CertKey: "etcd-client.crt", CAKey: "etcd-client-ca.crt", Cert: l.Client.CertPEM, Bundle: l.Trust},
	}
	with := func(i int, f func(*InUse)) []InUse {
		out := append([]InUse{}, good...)
		f(&out[i])
		return out
	}
	for _, tc := range []struct {
		name  string
		items []InUse
		now   time.Time
		want  Verdict
		msg   string
	}{
		{"fresh", good, t0.Add(time.Hour), Valid, "3 certificates valid"},
		{"within 30 days", good, t0.Add(31 * 24 * time.Hour), ExpiringSoon, `secret "p" (peer.crt) expires at`},
		{"expired", good, t0.Add(61 * 24 * time.Hour), Expired, `secret "p" (peer.crt) expired at`},
		{"another cluster's host", with(0, func(i *InUse) { i.Hosts = []string{"db-a.other.ns.svc"} }), t0.Add(time.Hour), Mismatched, "does not name db-a.other.ns.svc"},
		{"another CA", with(1, func(i *InUse) { i.Bundle = other.Trust }), t0.Add(time.Hour), Mismatched, `secret "s" (server.crt) is not signed by a CA of server-ca.crt`},
		{"junk", with(2, func(i *InUse) { i.Cert = []byte("junk") }), t0.Add(time.Hour), Mismatched, `secret "c" (etcd-client.crt): no PEM certificate`},
		{"expired beats mismatched", with(1, func(i *InUse) { i.Bundle = other.Trust }), t0.Add(61 * 24 * time.Hour), Expired, "expired"},
	} {
		a := Assess(tc.items, tc.now, WarnWithin)
		if a.Verdict != tc.want || !strings.Contains(a.Message, tc.msg) {
			t.Errorf("%s: verdict %d (%s), want %d (%s)", tc.name, a.Verdict, a.Message, tc.want, tc.msg)
		}
		if strings.Contains(a.Message, "PRIVATE") || strings.Contains(a.Message, "BEGIN") {
			t.Errorf("%s: message shows PEM", tc.name)
		}
	}
	a := Assess(good, t0, WarnWithin)
	peer, _ := ParseCert(l.Peer.CertPEM)
	ca, _ := ParseCert(s.CA.CertPEM)
	if !a.Expiry[KindPeer].Equal(peer.NotAfter) || !a.Expiry[KindCA].Equal(ca.NotAfter) || len(a.Expiry) != 4 {
		t.Errorf("expiry %v", a.Expiry)
	}
}
