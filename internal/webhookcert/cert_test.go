package webhookcert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testNames = DNSNames("etcd-operator-webhook-service", "etcd-operator-system")

func mustRenew(t *testing.T, b *Bundle, plan Plan, names []string, now time.Time) *Bundle {
	t.Helper()
	nb, err := Renew(b, plan, names, now)
	if err != nil {
		t.Fatalf("Renew(%v): %v", plan, err)
	}
	return nb
}

func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

func TestDNSNames(t *testing.T) {
	got := strings.Join(DNSNames("svc", "ns"), ",")
	if want := "svc,svc.ns,svc.ns.svc,svc.ns.svc.cluster.local"; got != want {
		t.Errorf("DNSNames = %s, want %s", got, want)
	}
}

// TestNewBundle: a fresh bundle is a CA and a serving pair that a TLS client trusting only
// the CA accepts for every Service name, valid for the documented periods.
func TestNewBundle(t *testing.T) {
	now := time.Now()
	b := mustRenew(t, &Bundle{}, RenewAll, testNames, now)
	if p, why := Decide(b, testNames, now); p != Keep {
		t.Fatalf("fresh bundle: Decide = %v (%s), want keep", p, why)
	}
	cas := parseCerts(t, b.CACert)
	if len(cas) != 1 || !cas[0].IsCA {
		t.Fatalf("ca.crt holds %d certificates, want one CA", len(cas))
	}
	if d := cas[0].NotAfter.Sub(now); d < caValidity-time.Minute || d > caValidity+time.Minute {
		t.Errorf("CA valid for %v more, want about %v", d, caValidity)
	}
	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		t.Fatalf("serving pair: %v", err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if d := leaf.NotAfter.Sub(now); d < servingValidity-time.Minute || d > servingValidity+time.Minute {
		t.Errorf("serving certificate valid for %v more, want about %v", d, servingValidity)
	}
	if leaf.NotBefore.After(now.Add(-30 * time.Minute)) {
		t.Errorf("NotBefore %v is not backdated for clock skew", leaf.NotBefore)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(b.CACert)
	for _, n := range testNames {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: n, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate not valid for %s: %v", n, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.etcd-operator-system.svc"}); err == nil {
		t.Error("serving certificate valid for a name it was not issued for")
	}
	other := mustRenew(t, &Bundle{}, RenewAll, testNames, now)
	if bytes.Equal(other.CACert, b.CACert) || bytes.Equal(other.Key, b.Key) {
		t.Error("two fresh bundles share a CA or key")
	}
	if _, err := Renew(&Bundle{}, RenewAll, nil, now); err == nil {
		t.Error("Renew without names succeeded")
	}
}

// TestDecide covers each reason to keep or renew.
func TestDecide(t *testing.T) {
	now := time.Now()
	good := mustRenew(t, &Bundle{}, RenewAll, testNames, now)
	// issuedAt returns a bundle whose serving certificate was issued at a past time, so
	// that it expires servingValidity later.
	servingIssuedAt := func(at time.Time) *Bundle { return mustRenew(t, good, RenewServing, testNames, at) }
	// caIssuedAt returns a bundle whose CA was issued at a past time, with a serving
	// certificate issued now (so only the CA's age matters).
	caIssuedAt := func(at time.Time) *Bundle {
		return mustRenew(t, mustRenew(t, &Bundle{}, RenewAll, testNames, at), RenewServing, testNames, now)
	}
	otherCA := mustRenew(t, &Bundle{}, RenewAll, testNames, now)
	yearAgo := now.Add(-servingValidity)

	cases := []struct {
		name string
		b    *Bundle
		want Plan
	}{
		{"fresh", good, Keep},
		{"serving 31 days left", servingIssuedAt(yearAgo.Add(31 * 24 * time.Hour)), Keep},
		{"serving 29 days left", servingIssuedAt(yearAgo.Add(29 * 24 * time.Hour)), RenewServing},
		{"serving expired", servingIssuedAt(yearAgo.Add(-time.Hour)), RenewServing},
		{"serving for other names", mustRenew(t, good, RenewServing, DNSNames("other", "etcd-operator-system"), now), RenewServing},
		{"serving for fewer names", mustRenew(t, good, RenewServing, testNames[:3], now), RenewServing},
		{"serving from another CA", &Bundle{CACert: good.CACert, CAKey: good.CAKey, Cert: otherCA.Cert, Key: otherCA.Key}, RenewServing},
		{"serving key mismatch", &Bundle{CACert: good.CACert, CAKey: good.CAKey, Cert: good.Cert, Key: otherCA.Key}, RenewServing},
		{"serving missing", &Bundle{CACert: good.CACert, CAKey: good.CAKey}, RenewServing},
		{"serving garbage", &Bundle{CACert: good.CACert, CAKey: good.CAKey, Cert: []byte("x"), Key: []byte("y")}, RenewServing},
		{"empty", &Bundle{}, RenewAll},
		{"CA garbage", &Bundle{CACert: []byte("not pem"), CAKey: good.CAKey, Cert: good.Cert, Key: good.Key}, RenewAll},
		{"CA key mismatch", &Bundle{CACert: good.CACert, CAKey: otherCA.CAKey, Cert: good.Cert, Key: good.Key}, RenewAll},
		{"CA is a leaf", &Bundle{CACert: good.Cert, CAKey: good.Key, Cert: good.Cert, Key: good.Key}, RenewAll},
		{"CA 29 days left", caIssuedAt(now.Add(-caValidity + 29*24*time.Hour)), RenewAll},
		{"CA 31 days left", caIssuedAt(now.Add(-caValidity + 31*24*time.Hour)), Keep},
		{"CA from the future", caIssuedAt(now.Add(2 * time.Hour)), RenewAll},
	}
	for _, c := range cases {
		got, why := Decide(c.b, testNames, now)
		if got != c.want {
			t.Errorf("%s: Decide = %v (%s), want %v", c.name, got, why, c.want)
		}
		if c.want != Keep {
			// Renewing must always produce something Decide keeps, with the CA only
			// replaced when it had to be.
			nb := mustRenew(t, c.b, got, testNames, now)
			if p, why := Decide(nb, testNames, now); p != Keep {
				t.Errorf("%s: after %v, Decide = %v (%s)", c.name, got, p, why)
			}
			if got == RenewServing && !bytes.Equal(nb.CACert, c.b.CACert) {
				t.Errorf("%s: renewing the serving certificate changed the CA", c.name)
			}
		}
		for _, secret := range [][]byte{c.b.Key, c.b.CAKey} {
			if len(secret) > 32 && strings.Contains(why, string(secret)) {
				t.Errorf("%s: reason contains key material", c.name)
			}
		}
	}
}

// TestServingNeverOutlivesCA: a serving certificate issued late in the CA's life ends
// with the CA, so Decide renews both together rather than trusting an orphan.
func TestServingNeverOutlivesCA(t *testing.T) {
	now := time.Now()
	b := mustRenew(t, &Bundle{}, RenewAll, testNames, now.Add(-caValidity+100*24*time.Hour))
	b = mustRenew(t, b, RenewServing, testNames, now)
	ca := parseCerts(t, b.CACert)[0]
	leaf := parseCerts(t, b.Cert)[0]
	if leaf.NotAfter.After(ca.NotAfter) {
		t.Errorf("serving certificate ends %v, after its CA %v", leaf.NotAfter, ca.NotAfter)
	}
}

// TestCARotationKeepsPreviousCA: a rotated ca.crt trusts the new CA first (the one whose
// key is ca.key) and the previous one while it is valid, so a replica still serving the
// old certificate is not cut off; an expired previous CA is dropped.
func TestCARotationKeepsPreviousCA(t *testing.T) {
	now := time.Now()
	old := mustRenew(t, &Bundle{}, RenewAll, testNames, now.Add(-caValidity+10*24*time.Hour))
	old = mustRenew(t, old, RenewServing, testNames, now.Add(-time.Hour))
	nb := mustRenew(t, old, RenewAll, testNames, now)
	cas := parseCerts(t, nb.CACert)
	oldCA := parseCerts(t, old.CACert)[0]
	if len(cas) != 2 || !cas[1].Equal(oldCA) || cas[0].Equal(oldCA) {
		t.Fatalf("rotated ca.crt holds %d certificates; want the new CA then the old", len(cas))
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(nb.CACert)
	oldLeaf := parseCerts(t, old.Cert)[0]
	if _, err := oldLeaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: testNames[2], CurrentTime: now}); err != nil {
		t.Errorf("the old serving certificate is not trusted by the rotated bundle: %v", err)
	}
	if p, why := Decide(nb, testNames, now); p != Keep {
		t.Errorf("rotated bundle: Decide = %v (%s)", p, why)
	}
	// Rotating again after the old CA expired drops it.
	later := now.Add(caValidity - 10*24*time.Hour)
	again := mustRenew(t, nb, RenewAll, testNames, later)
	if n := len(parseCerts(t, again.CACert)); n != 2 {
		t.Errorf("second rotation: ca.crt holds %d certificates, want the newest two", n)
	}
	if parseCerts(t, again.CACert)[1].Equal(oldCA) {
		t.Error("an expired CA was kept in ca.crt")
	}
}

// TestWriteFiles: files land with the server's names and modes, are replaced only when
// they change, and no temporary files are left behind.
func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "serving-certs")
	b := mustRenew(t, &Bundle{}, RenewAll, testNames, time.Now())
	changed, err := WriteFiles(dir, b)
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Fatalf("written pair unusable: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if changed, err := WriteFiles(dir, b); err != nil || changed {
		t.Errorf("rewrite of the same pair: changed=%v err=%v, want no change", changed, err)
	}
	nb := mustRenew(t, b, RenewServing, testNames, time.Now())
	if changed, err := WriteFiles(dir, nb); err != nil || !changed {
		t.Errorf("write of a renewed pair: changed=%v err=%v", changed, err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if !bytes.Equal(got, nb.Cert) {
		t.Error("tls.crt is not the renewed certificate")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("certificate dir holds %v, want tls.crt and tls.key only", names)
	}
}
