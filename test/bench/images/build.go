package images

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// modulePath is this repository's module, to recognise its root.
const modulePath = "github.com/etcd-operator/etcd-operator"

// RepoRoot is the root of this repository's checkout: the directory of this source file
// three levels up when the binary was built from a checkout, else the main module of the
// working directory (`go env GOMOD`), e.g. under -trimpath.
func RepoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
		if isRepoRoot(root) {
			return filepath.Clean(root), nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if !isRepoRoot(root) {
		return "", fmt.Errorf("cannot find the %s checkout (working directory outside it)", modulePath)
	}
	return root, nil
}

func isRepoRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.HasPrefix(b, []byte("module "+modulePath+"\n"))
}

// BuildOperator builds the repository's operator (its main package at the root) as a
// static binary outDir/manager, the way the Dockerfile does, and returns its path.
func BuildOperator(repoRoot, outDir string) (string, error) {
	return goBuild(repoRoot, ".", filepath.Join(outDir, "manager"))
}

// BuildPause builds test/cmd/pause as a static binary outDir/pause.
func BuildPause(repoRoot, outDir string) (string, error) {
	return goBuild(repoRoot, "./test/cmd/pause", filepath.Join(outDir, "pause"))
}

// goBuild runs `CGO_ENABLED=0 go build -trimpath -o out pkg` in repoRoot: the images
// have no C library, so every binary must be static (checked afterwards). With
// BinaryCacheEnv set, it returns the binary built there by the first process instead.
func goBuild(repoRoot, pkg, out string) (string, error) {
	if dir := os.Getenv(BinaryCacheEnv); dir != "" {
		// Keyed by checkout as well: a build from another directory is not this one.
		sum := sha256.Sum256([]byte(filepath.Clean(repoRoot)))
		return cachedBuild(filepath.Join(dir, hex.EncodeToString(sum[:8])), repoRoot, pkg, filepath.Base(out))
	}
	return goBuildUncached(repoRoot, pkg, out)
}

func goBuildUncached(repoRoot, pkg, out string) (string, error) {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.Bytes())
	}
	if err := ociimage.CheckStatic(out); err != nil {
		return "", errors.Join(err, os.Remove(out))
	}
	return out, nil
}

// BinaryCacheEnv names a directory where test processes started one after another on
// one checkout (hack/go-test-shards.sh runs one per test and sets it to a directory of
// its run) share the binaries they put in images: the first builds each one, the others
// use it. Linking the operator costs about 8 CPU-seconds, which every e2e test paid
// again, on a 2-core machine minutes of a make test run. The directory must not outlive
// the checkout's state: the cache is keyed by checkout and binary name, not by content.
const BinaryCacheEnv = "ETCD_OPERATOR_BENCH_BINARY_CACHE"

// cachedBuild returns dir/name, building pkg there first unless an earlier process did;
// a lock on the directory makes concurrent processes wait for one build.
func cachedBuild(dir, repoRoot, pkg, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it too
	out := filepath.Join(dir, name)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	built, err := goBuildUncached(repoRoot, pkg, filepath.Join(tmp, name))
	if err != nil {
		return "", err
	}
	return out, os.Rename(built, out)
}
