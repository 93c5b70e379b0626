package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// layoutLabels reads the labels of the one image in an OCI layout directory.
func layoutLabels(t *testing.T, dir string) map[string]string {
	t.Helper()
	idx, m, err := ociimage.ReadLayout(dir)
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("layout has %v images (err %v), want 1", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Config.Labels
}

func TestBundleCommandWritesTheLabelledImage(t *testing.T) {
	oci := filepath.Join(t.TempDir(), "oci")
	var out bytes.Buffer
	if err := run([]string{"bundle", "--dir", "../../bundle", "--tag", "example.test/b:v0.2.0", "--oci", oci}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "example.test/b:v0.2.0@sha256:") {
		t.Errorf("printed %q, want the reference with its digest", out.String())
	}
	if got := layoutLabels(t, oci)["operators.operatorframework.io.bundle.package.v1"]; got != "etcd-operator" {
		t.Errorf("package label %q", got)
	}
}

func TestCatalogCommandWritesTheCatalogItServes(t *testing.T) {
	opmDir := filepath.Join(testenv.CacheDir(), "opm-v1.60.0")
	if _, err := os.Stat(filepath.Join(opmDir, ".done")); err != nil {
		testenv.Missing(t, "opm is not in the tool cache (bash hack/tools.sh olm): %v", err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"catalog", "--opm-dir", opmDir,
		"--bundle", "../bundle/released/0.1.0=example.test/b:v0.1.0", "--bundle", "../../bundle=example.test/b:v0.2.0",
		"--tag", "example.test/c:v0.2.0", "--oci", filepath.Join(dir, "oci"), "--fbc-out", filepath.Join(dir, "fbc.yaml")}, &out)
	if err != nil {
		t.Fatal(err)
	}
	fbc, err := os.ReadFile(filepath.Join(dir, "fbc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fbc), "replaces: etcd-operator.v0.1.0") || !strings.Contains(string(fbc), "image: example.test/b:v0.1.0") {
		t.Errorf("rendered catalog lacks the upgrade edge or a bundle image:\n%.2000s", fbc)
	}
	if got := layoutLabels(t, filepath.Join(dir, "oci"))["operators.operatorframework.io.index.configs.v1"]; got != "/configs" {
		t.Errorf("configs label %q", got)
	}
}

func TestCommandsRefuseIncompleteArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"image"},
		{"bundle", "--tag", "x:1"},            // nowhere to write
		{"catalog", "--tag", "x:1", "--push"}, // no opm
		{"catalog", "--bundle", "no-equals-sign"}, // bad --bundle
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
