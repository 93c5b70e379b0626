package images

import (
	"fmt"
	"path/filepath"
	"runtime"

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
//
// One difference from the image CoreOS defaulted to remains: busybox 1.28.0's glibc
// build resolved through glibc, which applies resolv.conf's search domains to a dotted
// name such as <pod>.<cluster>.<ns>.svc; Debian's busybox (1.35) has a resolver of its
// own that applies them only to names without a dot, and its shell runs its own applets
// before any program in PATH, so no wrapper can stand in. A check-dns script run from
// this image must name the member with the cluster domain.
var busyboxApplets = []string{"busybox", "sh", "nslookup", "sleep"}

// Busybox is the static busybox of Debian's busybox-static package in the tool cache
// (hack/tools.sh busybox unpacks it there from the downloaded package, never installing
// it). It is not fetched here: a test runs in the bench's namespace, where apt's state
// is not visible.
func Busybox(cacheDir string) (string, error) {
	found, _ := filepath.Glob(filepath.Join(cacheDir, "busybox-static-*", ".done"))
	if len(found) == 0 {
		return "", fmt.Errorf("busybox-static is not in the tool cache %s (run hack/tools.sh busybox)", cacheDir)
	}
	bin := filepath.Join(filepath.Dir(found[0]), "busybox")
	if err := ociimage.CheckStatic(bin); err != nil {
		return "", err
	}
	return bin, nil
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
