// Package testenv locates the binaries hack/tools.sh caches (kube-apiserver, etcd, MinIO)
// for tests, and decides what a missing one means: a skip on a developer's machine that
// has not run `make tools`, a failure under CI, where .ci/run builds them first.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// K8sVersion and EtcdVersions match hack/tools.sh.
const (
	K8sVersion        = "v1.37.2"
	NewestEtcdVersion = "v3.7.3"
	OlderEtcdVersion  = "v3.6.16"
	// Etcd35Version is the 3.5 release users still run (at or past 3.5.32, the oldest
	// 3.5 patch etcd's upgrade guide lets step to 3.6).
	Etcd35Version = "v3.5.36"
)

// CacheDir is the tool cache root: $ETCD_OPERATOR_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator, as in hack/tools.sh.
func CacheDir() string {
	if d := os.Getenv("ETCD_OPERATOR_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "etcd-operator")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "etcd-operator")
}

// Require returns the path of a cached tool (relative to CacheDir, e.g.
// "etcd-v3.7.3/etcd"), or ends the test: Skip outside CI, Fatal under CI.
func Require(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(CacheDir(), rel)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "%s not found (%v); run `make tools`", p, err)
	}
	return p
}

// Missing ends a test whose prerequisites are absent: a failure under CI, a skip elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// EnvtestAssets returns a KUBEBUILDER_ASSETS directory (kube-apiserver, etcd, kubectl).
func EnvtestAssets(t testing.TB) string {
	t.Helper()
	Require(t, filepath.Join("k8s-"+K8sVersion, ".done"))
	dir := filepath.Join(CacheDir(), "envtest-"+K8sVersion)
	for _, b := range []string{"kube-apiserver", "etcd", "kubectl"} {
		Require(t, filepath.Join("envtest-"+K8sVersion, b))
	}
	return dir
}

// Etcd returns the cached etcd binary of a version such as "v3.7.3".
func Etcd(t testing.TB, version string) string {
	t.Helper()
	return Require(t, filepath.Join("etcd-"+version, "etcd"))
}
