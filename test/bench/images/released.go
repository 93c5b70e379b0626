package images

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrShallow: a shallow clone does not hold the released commit's source.
var ErrShallow = errors.New("this clone is shallow: the released operator's source is not in its history")

// releasedDir is where a released bundle is kept unchanged (see the Makefile's
// PREV_VERSION), relative to the repository root.
func releasedDir(version string) string { return "hack/bundle/released/" + version }

// ReleasedCommit is the commit whose source is the released operator version: the one
// that added hack/bundle/released/<version>. That commit only copies bundle/ there, so
// its operator is the one the released bundle was generated from (a test checks the
// two bundles are equal). It needs the repository's history (not a shallow clone).
func ReleasedCommit(repoRoot, version string) (string, error) {
	if out, err := git(repoRoot, "rev-parse", "--is-shallow-repository"); err == nil && strings.TrimSpace(out) == "true" {
		return "", ErrShallow
	}
	out, err := git(repoRoot, "log", "--diff-filter=A", "--format=%H", "--", releasedDir(version))
	if err != nil {
		return "", err
	}
	commits := strings.Fields(out)
	if len(commits) == 0 {
		return "", fmt.Errorf("no commit adds %s in this clone's history (a shallow clone?)", releasedDir(version))
	}
	return commits[len(commits)-1], nil // the first that added it
}

// BuildOperatorAt builds the operator of commit rev of repoRoot's history as a static
// outDir/manager, from the commit's tree exported into outDir/src (git archive): for the
// released version an upgrade test starts from.
func BuildOperatorAt(repoRoot, rev, outDir string) (string, error) {
	src := filepath.Join(outDir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", repoRoot, "archive", "--format=tar", rev)
	extract := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	extract.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, extract.Stderr = &stderr, &stderr
	if err := extract.Start(); err != nil {
		return "", err
	}
	aerr := archive.Run()
	if err := extract.Wait(); err != nil || aerr != nil {
		return "", fmt.Errorf("export %s: git archive: %v, tar: %v\n%s", rev, aerr, err, stderr.Bytes())
	}
	return goBuild(src, ".", filepath.Join(outDir, "manager"))
}

func git(dir string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out), nil
}
