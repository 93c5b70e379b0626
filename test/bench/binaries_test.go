package bench

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImageResolver(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("ETCD_OPERATOR_CACHE", cache)
	mk := func(p string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	etcd37 := mk(filepath.Join(cache, "etcd-v3.7.3", "etcd"))
	etcdctl37 := mk(filepath.Join(cache, "etcd-v3.7.3", "etcdctl"))
	etcd36 := mk(filepath.Join(cache, "etcd-v3.6.16", "etcd"))
	mk(filepath.Join(cache, "etcd-v3.7.3", "sh")) // present but not an etcd tool
	opDir := t.TempDir()
	op := mk(filepath.Join(opDir, "manager"))

	resolve := ImageResolver(map[string]string{"example.com/etcd-operator:dev": opDir})
	for _, tc := range []struct {
		image, cmd0, want, err string
	}{
		{"gcr.io/etcd-development/etcd:v3.7.3", "", etcd37, ""},
		{"quay.io/coreos/etcd:v3.6.16", "/usr/local/bin/etcd", etcd36, ""},
		{"etcd:v3.7.3", "etcdctl", etcdctl37, ""},
		{"gcr.io/etcd-development/etcd:v3.7.3@sha256:abcdef", "etcd", etcd37, ""},
		{"gcr.io/etcd-development/etcd:v3.7.3", "/bin/sh", "", "only etcd, etcdctl, etcdutl"},
		{"gcr.io/etcd-development/etcd:v3.5.0", "", "", "not cached"},
		{"gcr.io/etcd-development/etcd:latest", "", "", "not available"},
		{"quay.io/coreos/etcd-operator:v0.9.4", "", "", "not available"},
		{"example.com/etcd-operator:dev", "/manager", op, ""},
		{"example.com/etcd-operator:dev", "manager", op, ""},
		{"example.com/etcd-operator:dev", "", "", "no entrypoint"},
		{"example.com/etcd-operator:dev", "other", "", "not an executable"},
		{"busybox", "sh", "", "not available"},
	} {
		got, err := resolve(tc.image, tc.cmd0)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("resolve(%q, %q) = %q, %v; want error containing %q", tc.image, tc.cmd0, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolve(%q, %q) = %q, %v; want %q", tc.image, tc.cmd0, got, err, tc.want)
		}
	}
}

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
