package bench

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.CACert, p.CAKey, p.ServingCert, p.ServingKey, p.AdminCert, p.AdminKey, p.SAKey, p.SAPub} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.caPEM)
	load := func(path string) *x509.Certificate {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(raw)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	serving := load(p.ServingCert)
	for _, name := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("serving cert for %s: %v", name, err)
		}
	}
	admin := load(p.AdminCert)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert: %v", err)
	}
	if len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin cert groups = %v", admin.Subject.Organization)
	}
	if _, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM); err != nil {
		t.Errorf("admin pair: %v", err)
	}
}
