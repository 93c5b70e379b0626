package controllers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/render"
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

// TestApplyCacheOptions: the one function main.go and the e2e framework build their
// managers' caches with sets all of it: the watched namespace, Secrets read around the
// cache, the owned-objects selector on the kinds the operator makes, the transforms.
func TestApplyCacheOptions(t *testing.T) {
	var all ctrl.Options
	ApplyCacheOptions(&all, "")
	if all.Cache.DefaultNamespaces != nil {
		t.Errorf("no watch namespace: caches restricted to %v", all.Cache.DefaultNamespaces)
	}
	var opts ctrl.Options
	ApplyCacheOptions(&opts, "team-a")
	if _, ok := opts.Cache.DefaultNamespaces["team-a"]; !ok || len(opts.Cache.DefaultNamespaces) != 1 {
		t.Errorf("watch namespace team-a: caches in %v", opts.Cache.DefaultNamespaces)
	}
	if opts.Client.Cache == nil || !slices.ContainsFunc(opts.Client.Cache.DisableFor, func(o client.Object) bool { _, ok := o.(*corev1.Secret); return ok }) {
		t.Errorf("Secrets are read through the cache: client cache options %+v", opts.Client.Cache)
	}
	want := render.OwnedSelector().String()
	selected := map[string]bool{}
	for obj, by := range opts.Cache.ByObject {
		switch obj.(type) {
		case *corev1.Pod, *corev1.PersistentVolumeClaim, *corev1.Service, *policyv1.PodDisruptionBudget:
			if by.Label == nil || by.Label.String() != want {
				t.Errorf("%T cached with selector %v, want %s", obj, by.Label, want)
			}
			selected[fmt.Sprintf("%T", obj)] = true
		case *corev1.Node:
			if by.Transform == nil {
				t.Error("Nodes are cached whole (no transform)")
			}
		}
	}
	if len(selected) != 4 {
		t.Errorf("selected kinds %v, want pods, claims, Services and budgets", selected)
	}
	if opts.Cache.DefaultTransform == nil {
		t.Error("no default transform: cached objects keep their managedFields")
	}
}
