package olmimage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// A bundle image built from a directory extracts back to the same files.
func TestExtractBundleRoundTrip(t *testing.T) {
	spec, err := BundleSpec(currentBundle)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := ExtractBundle(img, out); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(currentBundle, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			want, _ := os.ReadFile(filepath.Join(currentBundle, sub, e.Name()))
			got, err := os.ReadFile(filepath.Join(out, sub, e.Name()))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s: extracted copy differs (err %v)", sub, e.Name(), err)
			}
			n++
		}
	}
	if n < 3 {
		t.Fatalf("only %d bundle files compared", n)
	}
}

// Files outside the two bundle directories, and names that try to leave them, are not
// written; an image without a bundle is refused.
func TestExtractBundleIgnoresEverythingElse(t *testing.T) {
	src := t.TempDir()
	write := func(rel, data string) string {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := []ociimage.File{
		{Path: "/etc/passwd", Source: write("passwd", "root:x:0:0"), Mode: 0o644},
		{Path: "/manifests/../../escape.yaml", Source: write("escape", "x"), Mode: 0o644},
		{Path: "/manifests/deep/nested.yaml", Source: write("nested", "x"), Mode: 0o644},
	}
	img, err := ociimage.Build(ociimage.Spec{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	err = ExtractBundle(img, out)
	if err == nil || !strings.Contains(err.Error(), "not a registry+v1 bundle") {
		t.Fatalf("image without a bundle: err %v", err)
	}
	var written []string
	_ = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, p)
		}
		return nil
	})
	if len(written) != 0 {
		t.Fatalf("wrote %v from an image without a bundle", written)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(out), "escape.yaml"), filepath.Join(filepath.Dir(filepath.Dir(out)), "escape.yaml")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("wrote %s outside the bundle directory", p)
		}
	}
}
