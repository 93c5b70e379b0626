package controllers

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetectClusterDomain(t *testing.T) {
	cases := map[string]string{
		"search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.0.0.10\n": "cluster.local",
		"nameserver 1.1.1.1\nsearch ns.svc.corp.example. svc.corp.example.\n":                      "corp.example",
		"search example.com\n": "",
		"":                     "",
	}
	for content, want := range cases {
		p := filepath.Join(t.TempDir(), "resolv.conf")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := detectClusterDomain(p); got != want {
			t.Errorf("detectClusterDomain(%q) = %q, want %q", content, got, want)
		}
	}
	if got := detectClusterDomain(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("missing file: got %q", got)
	}
}
