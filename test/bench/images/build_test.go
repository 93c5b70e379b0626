package images

import (
	"os"
	"path/filepath"
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
