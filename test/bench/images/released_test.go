package images

import (
	"errors"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"os"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func TestReleasedCommitGeneratedTheReleasedBundle(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReleasedCommit(root, "0.1.0")
	if errors.Is(err, ErrShallow) {
		testenv.Missing(t, "%v", err) // CI fetches the history (.ci/run)
	}
	if err != nil {
		t.Fatal(err)
	}
	// At that commit bundle/ (what its generator made) is the kept release.
	if out, err := git(root, "diff", "--stat", c+":bundle", c+":"+releasedDir("0.1.0")); err != nil || out != "" {
		t.Errorf("at %s bundle/ and the released 0.1.0 differ (%v):\n%s", c, err, out)
	}
	if _, err := ReleasedCommit(root, "0.0.0-never"); err == nil {
		t.Error("a version never released has a commit")
	}
}

func TestBuildOperatorAtBuildsTheReleasedSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the operator from another tree (-short)")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReleasedCommit(root, "0.1.0")
	if errors.Is(err, ErrShallow) {
		testenv.Missing(t, "%v", err) // CI fetches the history (.ci/run)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	t0 := time.Now()
	bin, err := BuildOperatorAt(root, c, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %v", c[:12], time.Since(t0))
	if err := ociimage.CheckStatic(bin); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(out + "/src/hack/bundle/released/0.1.0/metadata/annotations.yaml"); err != nil {
		t.Errorf("exported tree is not the commit's: %v", err)
	}
	if _, err := BuildOperatorAt(root, "no-such-revision", t.TempDir()); err == nil {
		t.Error("an unknown revision builds")
	}
}
