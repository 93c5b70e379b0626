package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func TestRepoRootAndPauseBuild(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "test", "cmd", "pause", "main.go")); err != nil {
		t.Fatalf("RepoRoot %s is not this checkout: %v", root, err)
	}
	bin, err := BuildPause(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.CheckStatic(bin); err != nil {
		t.Error(err)
	}
	if _, err := BuildPause(t.TempDir(), t.TempDir()); err == nil {
		t.Error("built pause outside a checkout")
	}
}

// With BinaryCacheEnv set, the first build lands in the cache and later ones (other test
// processes of the same run) get that file back without building: its inode and
// modification time stay the same.
func TestBinaryCacheBuildsOnce(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv(BinaryCacheEnv, cache)
	first, err := BuildPause(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, cache+string(filepath.Separator)) {
		t.Fatalf("built %s, not in the cache %s", first, cache)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := BuildPause(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("second build %s (%v) is not the cached %s (%v)", second, after.ModTime(), first, before.ModTime())
	}
	if err := ociimage.CheckStatic(second); err != nil {
		t.Error(err)
	}
	entries, err := os.ReadDir(filepath.Dir(first))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "pause" && e.Name() != ".lock" {
			t.Errorf("the cache holds %s besides pause and its lock", e.Name())
		}
	}
	// Another directory's build is not this checkout's: it fails as it would uncached.
	if _, err := BuildPause(t.TempDir(), t.TempDir()); err == nil {
		t.Error("the cache answered for a directory that is not a checkout")
	}
}
