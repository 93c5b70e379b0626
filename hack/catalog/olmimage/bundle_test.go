package olmimage

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// dockerfileLabels reads the LABEL lines of bundle.Dockerfile.
func dockerfileLabels(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "bundle.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	labels := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "LABEL "); ok {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = v
		}
	}
	return labels
}

func TestBundleSpecIsWhatBundleDockerfileBuilds(t *testing.T) {
	spec, err := BundleSpec(currentBundle)
	if err != nil {
		t.Fatal(err)
	}
	if want := dockerfileLabels(t); len(want) == 0 || !maps.Equal(spec.Labels, want) {
		t.Errorf("labels %v, bundle.Dockerfile sets %v", spec.Labels, want)
	}
	paths := map[string]bool{}
	for _, f := range spec.Files {
		paths[f.Path] = true
		if f.Mode != 0o644 || f.UID != 0 {
			t.Errorf("%s: mode %v uid %d, want a root-owned 0644 file", f.Path, f.Mode, f.UID)
		}
	}
	for _, p := range []string{
		"/manifests/etcd-operator.v0.2.0.clusterserviceversion.yaml",
		"/manifests/etcd.database.coreos.com_etcdclusters.yaml",
		"/metadata/annotations.yaml",
	} {
		if !paths[p] {
			t.Errorf("%s missing from %v", p, paths)
		}
	}
	img, err := ociimage.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Labels[PackageAnnotation]; got != "etcd-operator" {
		t.Errorf("image label %s = %q", PackageAnnotation, got)
	}
}

func TestBundleSpecRefusesNestedDirectoriesAndMissingAnnotations(t *testing.T) {
	dir := copyBundle(t, releasedBundle)
	if err := os.Mkdir(filepath.Join(dir, "manifests", "extra"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := BundleSpec(dir); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("nested directory: err %v", err)
	}
	dir = copyBundle(t, releasedBundle)
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte("annotations: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BundleSpec(dir); err == nil || !strings.Contains(err.Error(), PackageAnnotation) {
		t.Errorf("no package annotation: err %v", err)
	}
}
