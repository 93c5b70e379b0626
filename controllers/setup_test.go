package controllers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
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

// The API server's addresses, refused as S3 endpoints, come from its URL (rest config)
// and the in-cluster Service host, whatever their form.
func TestAPIServerAddrs(t *testing.T) {
	got := apiServerAddrs("https://10.96.0.1:443", "10.0.0.1", "https://[fd00::1]:6443", "", "::ffff:192.0.2.7")
	want := []string{"10.96.0.1", "10.0.0.1", "fd00::1", "192.0.2.7"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("got %v, want %v", got, want)
		}
	}
}

// In a sharded fleet only the default shard's instance runs the EtcdBackup and
// EtcdRestore controllers (those objects are not sharded); an unsharded one always does.
func TestRunsBackups(t *testing.T) {
	for _, tc := range []struct {
		shard etcdcluster.Shard
		want  bool
	}{
		{etcdcluster.Shard{}, true},
		{etcdcluster.Shard{Key: "shard", Value: "a", Default: true}, true},
		{etcdcluster.Shard{Key: "shard", Value: "b"}, false},
	} {
		if got := RunsBackups(tc.shard); got != tc.want {
			t.Errorf("RunsBackups(%s) = %v, want %v", tc.shard, got, tc.want)
		}
	}
}
