package images

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// CoreOSBusyboxImage is the image CoreOS etcd-operator 0.9.4 ran its check-dns init
// container from when spec.pod.busyboxImage is empty: a short name, which the nodes'
// containerd normalises to the default registry's library/ repository (MirrorRef).
const CoreOSBusyboxImage = "busybox:1.28.0-glibc"

// busyboxApplets are the names the static busybox is installed under in the images
// below: the shell and the programs CoreOS's DNS-wait script and etcd probes call that
// the shell does not have built in. The image format has no links, so each is a copy.
var busyboxApplets = []string{"busybox", "sh", "nslookup", "sleep"}

// Busybox is the static busybox of Debian's busybox-static package in the tool cache,
// fetched once as hack/tools.sh fetches tools: the package is downloaded and unpacked
// into a temporary directory (apt-get download, dpkg-deb -x), never installed.
func Busybox(cacheDir string) (string, error) {
	if found, _ := filepath.Glob(filepath.Join(cacheDir, "busybox-static-*", "busybox")); len(found) > 0 {
		return found[0], nil
	}
	tmp, err := os.MkdirTemp("", "busybox-static-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// apt's download user cannot write into a private temporary directory.
	_ = os.Chmod(tmp, 0o755)
	if out, err := runIn(tmp, "apt-get", "download", "busybox-static"); err != nil {
		return "", fmt.Errorf("apt-get download busybox-static: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "busybox-static_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download busybox-static left %d packages in %s", len(debs), tmp)
	}
	version, err := runIn(tmp, "dpkg-deb", "-f", debs[0], "Version")
	if err != nil {
		return "", fmt.Errorf("dpkg-deb -f: %v", err)
	}
	root := filepath.Join(tmp, "root")
	if out, err := runIn(tmp, "dpkg-deb", "-x", debs[0], root); err != nil {
		return "", fmt.Errorf("dpkg-deb -x: %v\n%s", err, out)
	}
	return cacheBusybox(cacheDir, filepath.Join(root, "bin", "busybox"), version)
}

var unsafeVersionChars = regexp.MustCompile(`[^A-Za-z0-9.+-]`)

// cacheBusybox moves the unpacked binary into the cache under its package version, by
// renaming a complete directory, so a concurrent or interrupted fetch leaves no half file.
func cacheBusybox(cacheDir, bin, version string) (string, error) {
	if err := ociimage.CheckStatic(bin); err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir, "busybox-static-"+unsafeVersionChars.ReplaceAllString(strings.TrimSpace(version), "_"))
	staging, err := os.MkdirTemp(cacheDir, ".busybox-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(staging, "busybox"), data, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(staging, dir); err != nil && !os.IsExist(err) {
		if _, statErr := os.Stat(filepath.Join(dir, "busybox")); statErr != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "busybox"), nil
}

func runIn(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// BusyboxImage is an image with only the static busybox, as sh, nslookup and sleep in
// /bin: what CoreOS's check-dns init container needs of CoreOSBusyboxImage.
func BusyboxImage(busybox string) (v1.Image, error) {
	return ociimage.Build(ociimage.Spec{
		Files:        busyboxFiles(busybox),
		Env:          []string{"PATH=/bin"},
		Cmd:          []string{"/bin/sh"},
		OS:           "linux",
		Architecture: runtime.GOARCH,
	})
}

// EtcdWithShellImage is the cached etcd of version (vX.Y.Z) with busybox's shell beside
// it, as the etcd images of CoreOS's time had one: CoreOS's probes run
// "/bin/sh -ec 'ETCDCTL_API=3 etcdctl endpoint status'". The bench's own etcd images
// have no shell, as current etcd images have none.
func EtcdWithShellImage(cacheDir, version, busybox string) (v1.Image, error) {
	spec := ociimage.EtcdSpec(filepath.Join(cacheDir, "etcd-"+version))
	spec.Files = append(spec.Files, busyboxFiles(busybox)...)
	spec.OS, spec.Architecture = "linux", runtime.GOARCH
	return ociimage.Build(spec)
}

func busyboxFiles(busybox string) []ociimage.File {
	files := []ociimage.File{{Path: "/bin", Dir: true, Mode: 0o755}}
	for _, name := range busyboxApplets {
		files = append(files, ociimage.File{Path: "/bin/" + name, Source: busybox, Mode: 0o755})
	}
	return files
}
