package olmimage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func TestCatalogSpecBuildsACacheOPMServesAsIs(t *testing.T) {
	dir := opmDir(t)
	opm := filepath.Join(dir, "opm")
	pkg, fbc, err := Render(opm, Catalog{Channel: "alpha", Bundles: []Bundle{
		{Dir: releasedBundle, Image: "example.test/b:v0.1.0"},
		{Dir: currentBundle, Image: "example.test/b:v0.2.0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	spec, err := CatalogSpec(dir, pkg, fbc, work)
	if err != nil {
		t.Fatal(err)
	}
	var cacheFiles int
	byPath := map[string]ociimage.File{}
	for _, f := range spec.Files {
		byPath[f.Path] = f
		if f.Path == CacheDir || strings.HasPrefix(f.Path, CacheDir+"/") {
			cacheFiles++
			if f.UID != User || f.GID != User {
				t.Errorf("%s owned by %d:%d, want %d (opm serve locks the cache)", f.Path, f.UID, f.GID, User)
			}
		}
	}
	if cacheFiles < 2 {
		t.Errorf("cache has %d entries, want the directory and its files", cacheFiles)
	}
	for _, p := range []string{OPMBinary, "/bin/grpc_health_probe", ConfigsDir + "/etcd-operator/catalog.yaml"} {
		if _, ok := byPath[p]; !ok {
			t.Errorf("%s missing", p)
		}
	}
	if spec.Labels[ConfigsLabel] != ConfigsDir || spec.User != "1001" ||
		!slices.Equal(spec.Cmd, []string{"serve", ConfigsDir, "--cache-dir=" + CacheDir}) {
		t.Errorf("config: labels %v user %q cmd %v", spec.Labels, spec.User, spec.Cmd)
	}
	if _, err := ociimage.Build(spec); err != nil {
		t.Fatal(err)
	}

	// The image's command enforces the cache's integrity: the cache must match the
	// catalog also when the catalog sits elsewhere (/configs in the image).
	moved := filepath.Join(t.TempDir(), "configs")
	if err := os.Rename(filepath.Join(work, "configs"), moved); err != nil {
		t.Fatal(err)
	}
	serve := func(enforce bool) error {
		return exec.Command(opm, "serve", moved, "--cache-dir="+filepath.Join(work, "cache"),
			"--cache-only", fmt.Sprintf("--cache-enforce-integrity=%v", enforce), "--pprof-addr=").Run()
	}
	if err := serve(true); err != nil {
		t.Errorf("the built cache fails opm's integrity check: %v", err)
	}
	// A valid but different catalog (one more channel) must fail the check, else the
	// check above proves nothing.
	f := filepath.Join(moved, pkg, "catalog.yaml")
	more := "---\nschema: olm.channel\npackage: etcd-operator\nname: beta\nentries:\n- name: etcd-operator.v0.1.0\n"
	if err := os.WriteFile(f, append(fbc, more...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := serve(true); err == nil {
		t.Error("a changed catalog passes the integrity check")
	}
	if err := serve(false); err != nil {
		t.Errorf("the changed catalog is invalid, so the failed check proves nothing: %v", err)
	}
}
