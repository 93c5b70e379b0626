package certissue

import (
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func names() Names {
	return Names{Cluster: "db", Namespace: "ns", Domain: "cluster.local",
		ServiceIPs: []net.IP{net.ParseIP("10.96.0.7"), net.ParseIP("fd00::7")}}
}

func TestSANs(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		n        Names
		wantDNS  []string
		wantIPs  []string
		notNamed []string
	}{
		{KindPeer, names(),
			[]string{"*.db.ns.svc", "*.db.ns.svc.cluster.local"},
			[]string{"127.0.0.1", "::1"},
			[]string{"db-client", "localhost"}},
		{KindServer, names(),
			[]string{"*.db.ns.svc", "*.db.ns.svc.cluster.local", "db-client", "db-client.ns", "db-client.ns.svc", "db-client.ns.svc.cluster.local", "localhost"},
			[]string{"127.0.0.1", "::1", "10.96.0.7", "fd00::7"}, nil},
		{KindServer, Names{Cluster: "db", Namespace: "ns"},
			[]string{"*.db.ns.svc", "db-client", "db-client.ns", "db-client.ns.svc", "localhost"},
			[]string{"127.0.0.1", "::1"},
			[]string{"*.db.ns.svc."}},
	} {
		dns, ips := SANs(tc.kind, tc.n)
		if !slices.Equal(dns, tc.wantDNS) {
			t.Errorf("%s %+v: DNS %v, want %v", tc.kind, tc.n, dns, tc.wantDNS)
		}
		var got []string
		for _, ip := range ips {
			got = append(got, ip.String())
		}
		if !slices.Equal(got, tc.wantIPs) {
			t.Errorf("%s %+v: IPs %v, want %v", tc.kind, tc.n, got, tc.wantIPs)
		}
		for _, n := range tc.notNamed {
			if slices.Contains(dns, n) {
				t.Errorf("%s names %s", tc.kind, n)
			}
		}
	}
}

// Issued leaves verify against the CA for their usages, name every member host (by the
// wildcard) and the client Service, and never outlive the CA.
func TestIssueLeaves(t *testing.T) {
	st := Settings{CertificateLifetime: time.Hour, CALifetime: 90 * time.Minute}.WithDefaults()
	s, err := NewState("db", st, t0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(50 * time.Minute)
	l, err := IssueLeaves(s, names(), st, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		kind  Kind
		kp    KeyPair
		hosts []string
	}{
		{KindPeer, l.Peer, []string{"db-abcde.db.ns.svc.cluster.local", "db-xyz12.db.ns.svc"}},
		{KindServer, l.Server, []string{"db-abcde.db.ns.svc.cluster.local", "db-client.ns.svc", "10.96.0.7", "fd00::7", "localhost"}},
		{KindClient, l.Client, nil},
	} {
		c, err := ParseCert(x.kp.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(x.kind, c, l.Trust, now); err != nil {
			t.Errorf("%s: %v", x.kind, err)
		}
		for _, h := range x.hosts {
			if err := c.VerifyHostname(h); err != nil {
				t.Errorf("%s: %v", x.kind, err)
			}
		}
		if err := c.VerifyHostname("other.db2.ns.svc"); err == nil {
			t.Errorf("%s names another cluster's member", x.kind)
		}
		ca, _ := ParseCert(s.CA.CertPEM)
		if c.NotAfter.After(ca.NotAfter) {
			t.Errorf("%s outlives the CA: %v > %v", x.kind, c.NotAfter, ca.NotAfter)
		}
		if _, _, err := parseKeyPair(x.kp); err != nil {
			t.Errorf("%s key: %v", x.kind, err)
		}
	}
	client, _ := ParseCert(l.Client.CertPEM)
	if slices.Contains(client.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Error("client certificate may serve")
	}
	// A CA that is not the leaves' does not verify them.
	other, _ := NewState("db", st, t0)
	peer, _ := ParseCert(l.Peer.CertPEM)
	if err := Verify(KindPeer, peer, other.Trust, now); err == nil {
		t.Error("peer verified against another CA")
	}
}

func TestSettingsDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   Settings
		want Settings
	}{
		{Settings{}, Settings{DefaultCertificateLifetime, DefaultCertificateLifetime / 3, DefaultCALifetime, DefaultCALifetime / 3, DefaultCAStepDwell}},
		{Settings{CertificateLifetime: 9 * time.Minute, RenewBefore: 9 * time.Minute, CALifetime: time.Minute, CAStepDwell: 10 * time.Second},
			Settings{9 * time.Minute, 3 * time.Minute, 9 * time.Minute, 3 * time.Minute, 10 * time.Second}},
		{Settings{CertificateLifetime: time.Hour, RenewBefore: 10 * time.Minute, CALifetime: 2 * time.Hour},
			Settings{time.Hour, 10 * time.Minute, 2 * time.Hour, time.Hour, DefaultCAStepDwell}},
	} {
		if got := tc.in.WithDefaults(); got != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestMergeBundle(t *testing.T) {
	a, _ := NewCA("a", time.Hour, t0)
	b, _ := NewCA("b", time.Hour, t0)
	m, err := MergeBundle(a.CertPEM, b.CertPEM, a.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	certs, _ := ParseBundle(m)
	if len(certs) != 2 || certs[0].Subject.CommonName != "a" || certs[1].Subject.CommonName != "b" {
		t.Fatalf("merged %d certificates", len(certs))
	}
	if !SameBundle(m, append(append([]byte{}, b.CertPEM...), a.CertPEM...)) || SameBundle(m, a.CertPEM) {
		t.Error("SameBundle")
	}
	if _, err := MergeBundle(a.CertPEM, []byte("junk")); err == nil {
		t.Error("junk merged")
	}
}

func TestStateRoundTrip(t *testing.T) {
	st := Settings{}.WithDefaults()
	s, _ := NewState("db", st, t0)
	s2, err := Apply(s, Decision{Step: BeginCARotation}, "db", st, "tok", t0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeState(s2.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 || got.Phase != PhaseTrusting || got.Next == nil || got.RotationToken != "tok" || !SameBundle(got.Trust, s2.Trust) || !got.Since.Equal(t0) {
		t.Errorf("decoded %+v", got)
	}
	for key, mutate := range map[string]func(map[string][]byte){
		StateGeneration: func(d map[string][]byte) { d[StateGeneration] = []byte("0") },
		StateCAKey:      func(d map[string][]byte) { d[StateCAKey] = s2.Next.KeyPEM },
		StateTrust:      func(d map[string][]byte) { delete(d, StateTrust) },
		StatePhase:      func(d map[string][]byte) { d[StatePhase] = []byte("Sideways") },
		StateSince:      func(d map[string][]byte) { d[StateSince] = []byte("yesterday") },
	} {
		d := s2.Encode()
		mutate(d)
		if _, err := DecodeState(d); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s broken: %v", key, err)
		}
	}
}

// Decide renews when a leaf is due, misses a name or is not the CA's, and rotates the
// CA in three generations, each only once the one before is rolled out.
func TestDecide(t *testing.T) {
	st := Settings{CertificateLifetime: 30 * time.Minute, CALifetime: 24 * time.Hour}.WithDefaults()
	s, _ := NewState("db", st, t0)
	leaves, _ := IssueLeaves(s, names(), st, t0)
	noIPs := names()
	noIPs.ServiceIPs = nil
	leavesNoIPs, _ := IssueLeaves(s, noIPs, st, t0)
	other, _ := NewState("db", st, t0)
	foreign, _ := IssueLeaves(other, names(), st, t0)
	long := st
	long.CertificateLifetime = 2 * time.Hour
	longLeaves, _ := IssueLeaves(s, names(), long, t0)
	mixed := leaves
	mixed.Server = foreign.Server
	ok := Observed{Leaves: leaves, RolledOut: true}
	trusting, _ := Apply(s, Decision{Step: BeginCARotation}, "db", st, "", t0)
	caDue := t0.Add(st.CALifetime - st.CARenewBefore)
	for _, tc := range []struct {
		name string
		s    State
		o    Observed
		now  time.Time
		want Step
		why  string
	}{
		{"fresh", s, ok, t0.Add(time.Minute), Keep, ""},
		{"just before 2/3", s, ok, t0.Add(19 * time.Minute), Keep, ""},
		{"at 2/3 of the lifetime", s, ok, t0.Add(20 * time.Minute), Renew, "peer certificate expires"},
		{"due but rolling out", s, Observed{Leaves: leaves}, t0.Add(25 * time.Minute), Keep, "rolling out"},
		{"service IPs missing", s, Observed{Leaves: leavesNoIPs, RolledOut: true}, t0.Add(time.Minute), Renew, "server certificate does not name [10.96.0.7 fd00::7]"},
		{"leaf of another CA", s, Observed{Leaves: mixed, RolledOut: true}, t0.Add(time.Minute), Renew, "server certificate is not signed"},
		{"bundle not the CA's", s, Observed{Leaves: Leaves{Peer: leaves.Peer, Server: leaves.Server, Client: leaves.Client, Trust: other.Trust}, RolledOut: true}, t0.Add(time.Minute), Renew, "bundle"},
		{"CA due", s, ok, caDue, BeginCARotation, "CA expires"},
		{"lifetime shortened in the spec", s, Observed{Leaves: longLeaves, RolledOut: true}, t0.Add(time.Minute), Renew, "lives longer than the lifetime asked for (30m0s)"},
		{"CA rotation requested", s, Observed{Leaves: leaves, RolledOut: true, RotationToken: "1"}, t0.Add(time.Minute), BeginCARotation, `"1"`},
		{"switch: dwell not over", trusting, ok, t0.Add(2 * time.Minute), Keep, "clients have until"},
		{"switch: dwell over", trusting, ok, t0.Add(st.CAStepDwell), SwitchCA, "new CA"},
		{"switch: state without since", func() State { x := trusting; x.Since = time.Time{}; return x }(), ok, t0.Add(time.Minute), SwitchCA, "new CA"},
		{"CA rotation already handled", func() State { x := s; x.RotationToken = "1"; return x }(), Observed{Leaves: leaves, RolledOut: true, RotationToken: "1"}, t0.Add(time.Minute), Keep, ""},
	} {
		d := Decide(tc.s, tc.o, names(), st, tc.now)
		if d.Step != tc.want || !strings.Contains(d.Reason, tc.why) {
			t.Errorf("%s: %s (%s), want %s (%s)", tc.name, d.Step, d.Reason, tc.want, tc.why)
		}
	}

	// The whole CA rotation: each generation's leaves are trusted by the one before and
	// the one after, both ways, so members on two generations keep talking.
	now := caDue
	cur := s
	curLeaves, _ := IssueLeaves(s, names(), st, now)
	steps := []Step{BeginCARotation, SwitchCA, DropOldCA, Keep}
	for i, want := range steps {
		if want == SwitchCA || want == DropOldCA {
			// Rolled out, but the clients have not had CAStepDwell since the clients'
			// Secret changed: nothing yet, whatever else is due.
			if d := Decide(cur, Observed{Leaves: curLeaves, RolledOut: true}, names(), st, now.Add(st.CAStepDwell-time.Second)); d.Step != Keep || !strings.Contains(d.Reason, "clients have until") {
				t.Fatalf("step %d within the dwell: %s (%s)", i, d.Step, d.Reason)
			}
			now = now.Add(st.CAStepDwell)
		}
		if d := Decide(cur, Observed{Leaves: curLeaves, RolledOut: false}, names(), st, now); d.Step != Keep {
			t.Fatalf("step %d before roll-out: %s", i, d.Step)
		}
		d := Decide(cur, Observed{Leaves: curLeaves, RolledOut: true}, names(), st, now)
		if d.Step != want {
			t.Fatalf("step %d: %s (%s), want %s", i, d.Step, d.Reason, want)
		}
		if want == Keep {
			break
		}
		next, err := Apply(cur, d, "db", st, "", now)
		if err != nil {
			t.Fatal(err)
		}
		if next.Generation != cur.Generation+1 {
			t.Fatalf("generation %d after %d", next.Generation, cur.Generation)
		}
		nextLeaves, err := IssueLeaves(next, names(), st, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]Leaves{{curLeaves, nextLeaves}, {nextLeaves, curLeaves}} {
			a, b := pair[0], pair[1]
			for _, x := range []struct {
				kind Kind
				kp   KeyPair
			}{{KindPeer, a.Peer}, {KindServer, a.Server}, {KindClient, a.Client}} {
				c, _ := ParseCert(x.kp.CertPEM)
				if err := Verify(x.kind, c, b.Trust, now); err != nil {
					t.Errorf("after %s: a %s certificate of one generation is not trusted by the other: %v", d.Step, x.kind, err)
				}
			}
		}
		if !next.Since.Equal(now) {
			t.Fatalf("after %s: since %s, want %s", d.Step, next.Since, now)
		}
		cur, curLeaves = next, nextLeaves
	}
	if cur.Phase != PhaseSteady || cur.Next != nil {
		t.Errorf("after the rotation: phase %q", cur.Phase)
	}
	if certs, _ := ParseBundle(cur.Trust); len(certs) != 1 || SameBundle(cur.Trust, s.Trust) {
		t.Errorf("after the rotation the bundle holds %d CAs (the old one: %v)", len(certs), SameBundle(cur.Trust, s.Trust))
	}
}

// NextDue is the moment Decide's answer turns from Keep to a step: a second before it
// nothing is due, at it the step is, for a renewal, each CA rotation step's dwell and the
// CA's own renewal.
func TestNextDue(t *testing.T) {
	st := Settings{CertificateLifetime: 30 * time.Minute, CALifetime: 24 * time.Hour, CAStepDwell: 20 * time.Second}.WithDefaults()
	s, _ := NewState("db", st, t0)
	leaves, _ := IssueLeaves(s, names(), st, t0)
	trusting, _ := Apply(s, Decision{Step: BeginCARotation}, "db", st, "", t0.Add(time.Minute))
	trustingLeaves, _ := IssueLeaves(trusting, names(), st, t0.Add(time.Minute))
	switched, _ := Apply(trusting, Decision{Step: SwitchCA}, "db", st, "", t0.Add(2*time.Minute))
	switchedLeaves, _ := IssueLeaves(switched, names(), st, t0.Add(2*time.Minute))
	// A CA that is due before the leaves it signed.
	longSt := Settings{CertificateLifetime: 30 * time.Minute, CALifetime: 40 * time.Minute}.WithDefaults()
	shortCA, _ := NewState("db", longSt, t0)
	shortCALeaves, _ := IssueLeaves(shortCA, names(), longSt, t0)
	for _, tc := range []struct {
		name string
		s    State
		l    Leaves
		st   Settings
		want time.Time
		step Step
	}{
		{"leaf renewal", s, leaves, st, t0.Add(20 * time.Minute), Renew},
		{"trusting dwell", trusting, trustingLeaves, st, t0.Add(time.Minute + st.CAStepDwell), SwitchCA},
		{"switched dwell", switched, switchedLeaves, st, t0.Add(2*time.Minute + st.CAStepDwell), DropOldCA},
		{"CA renewal first", shortCA, shortCALeaves, longSt, t0.Add(longSt.CALifetime - longSt.CARenewBefore), BeginCARotation},
	} {
		got := NextDue(tc.s, tc.l, tc.st)
		if !got.Equal(tc.want) {
			t.Errorf("%s: NextDue %s, want %s", tc.name, got, tc.want)
			continue
		}
		o := Observed{Leaves: tc.l, RolledOut: true}
		if d := Decide(tc.s, o, names(), tc.st, got.Add(-time.Second)); d.Step != Keep {
			t.Errorf("%s: a second before NextDue: %s (%s), want Keep", tc.name, d.Step, d.Reason)
		}
		if d := Decide(tc.s, o, names(), tc.st, got); d.Step != tc.step {
			t.Errorf("%s: at NextDue: %s (%s), want %s", tc.name, d.Step, d.Reason, tc.step)
		}
	}
	if got := NextDue(State{Phase: PhaseTrusting}, Leaves{}, st); !got.IsZero() {
		t.Errorf("a rotation step without since (dwell counted as elapsed): NextDue %s, want zero", got)
	}
}
