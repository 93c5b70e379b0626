package olmimage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// repoRoot is this checkout's root (tests run in hack/catalog/olmimage).
const repoRoot = "../../.."

var (
	currentBundle  = filepath.Join(repoRoot, "bundle")
	releasedBundle = filepath.Join(repoRoot, "hack", "bundle", "released", "0.1.0")
)

// opmDir is hack/tools.sh's opm directory; tests that run opm skip without it (fail under CI).
func opmDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testenv.CacheDir(), "opm-v1.60.0")
	if _, err := os.Stat(filepath.Join(dir, ".done")); err != nil {
		testenv.Missing(t, "opm is not in the tool cache (bash hack/tools.sh olm): %v", err)
	}
	return dir
}

// copyBundle copies a flat bundle directory into a temporary one a test may change.
func copyBundle(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(src, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, sub, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}
