package images

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// Image names. The bench-only ones live under a host that is no real registry, so that
// only the bench's mirror can ever serve them.
const (
	// BenchHost is the registry host of the images only the bench has.
	BenchHost = "bench.local"
	// PauseImage is the pod sandbox image (containerd's sandbox_image).
	PauseImage = BenchHost + "/pause:3.10"
	// CoreDNSVersion is the cached CoreDNS (hack/tools.sh COREDNS_VERSION).
	CoreDNSVersion = "v1.12.4"
	// CoreDNSImage runs the cluster DNS (clusterdns.Options.Image).
	CoreDNSImage = BenchHost + "/coredns:" + CoreDNSVersion
	// CoreDNSBinary is the entrypoint inside CoreDNSImage.
	CoreDNSBinary = "/coredns"
	// PauseBinary is the entrypoint inside PauseImage.
	PauseBinary = "/pause"
	// EtcdRepository is the repository etcd images are pushed under, one tag per
	// cached version, as the operator's default etcd image names them.
	EtcdRepository = "quay.io/coreos/etcd"
	// DefaultOperatorImage is operatorimage.Default (a test keeps them equal).
	DefaultOperatorImage = "example.com/etcd-operator:v0.2.0"
	// pauseUser is the pause image's user, as the upstream pause image has it.
	pauseUser = "65535:65535"
)

// hostCABundle is the operator image's CA bundle when the host has one (Debian's).
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// Set says which images a bench serves. Push builds them and uploads them.
type Set struct {
	// CacheDir is the tool cache (default: hack/tools.sh's). Every etcd-vX.Y.Z in it
	// becomes EtcdRepository:vX.Y.Z, and coredns-<CoreDNSVersion>/coredns CoreDNSImage.
	CacheDir string
	// RepoRoot is this repository's checkout, to build the pause program (default
	// RepoRoot()).
	RepoRoot string
	// Operator is a static operator binary (see BuildOperator); empty for no operator image.
	Operator string
	// OperatorImage names it (default DefaultOperatorImage).
	OperatorImage string
	// CABundle goes into the operator image (default the host's bundle, else empty).
	CABundle string
	// NoCoreDNS leaves CoreDNS out (e.g. before hack/tools.sh has built it).
	NoCoreDNS bool
	// OLM adds OLMImage and OPMImage (hack/tools.sh olm), for benches that install OLM
	// (test/bench/olm). Off by default: their ~300 MB of binaries take seconds of CPU
	// to compress, which benches without OLM should not pay.
	OLM bool
}

// EtcdVersions lists the etcd versions in the tool cache, sorted.
func EtcdVersions(cacheDir string) ([]string, error) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return nil, err
	}
	var vs []string
	for _, e := range entries {
		if m := etcdDir.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			vs = append(vs, m[1])
		}
	}
	slices.Sort(vs)
	return vs, nil
}

var etcdDir = regexp.MustCompile(`^etcd-(v\d+\.\d+\.\d+)$`)

// Push builds the set and pushes each image to the registry at registryAddr (host:port)
// under MirrorRef of its real name, and returns the real names pushed, in the order
// etcd versions, operator, pause, CoreDNS, OLM, opm. Images are built and uploaded a few at a
// time (compression is CPU-bound); each is built afresh, so that a bench process does
// not keep hundreds of megabytes of layers after the push, except the small pause image,
// whose build runs the Go toolchain and is kept for the process's lifetime.
func (s Set) Push(registryAddr string) ([]string, error) {
	imgs, err := s.images()
	if err != nil {
		return nil, err
	}
	return pushAll(registryAddr, imgs)
}

// pushAll builds and pushes imgs a few at a time and returns their names.
func pushAll(registryAddr string, imgs []image) ([]string, error) {
	errs := make([]error, len(imgs))
	sem := make(chan struct{}, max(1, min(runtime.GOMAXPROCS(0), 4)))
	var wg sync.WaitGroup
	for i, im := range imgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = push(registryAddr, im)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	names := make([]string, len(imgs))
	for i, im := range imgs {
		names[i] = im.name
	}
	return names, nil
}

// PushImage pushes img to the registry at registryAddr under MirrorRef of name (the
// name pods use), for images a test makes itself (e.g. OLM bundle and catalog images).
func PushImage(registryAddr, name string, img v1.Image) error {
	return push(registryAddr, image{name, func() (v1.Image, error) { return img, nil }})
}

func push(registryAddr string, im image) error {
	ref, err := MirrorRef(registryAddr, im.name)
	if err != nil {
		return err
	}
	img, err := im.build()
	if err != nil {
		return fmt.Errorf("image %s: %w", im.name, err)
	}
	// The bench's registry asks for no login to push; the machine's docker config is not read.
	if err := ociimage.PushAnonymous(ref, img); err != nil {
		return fmt.Errorf("push %s as %s: %w", im.name, ref, err)
	}
	return nil
}

// image is one image of a set: its real name and how to build it.
type image struct {
	name  string
	build func() (v1.Image, error)
}

func (s Set) images() ([]image, error) {
	cache := s.CacheDir
	if cache == "" {
		cache = testenv.CacheDir()
	}
	versions, err := EtcdVersions(cache)
	if err != nil || len(versions) == 0 {
		return nil, fmt.Errorf("no etcd-vX.Y.Z in the tool cache %s (run hack/tools.sh etcd): %v", cache, err)
	}
	var imgs []image
	for _, v := range versions {
		imgs = append(imgs, fromSpec(EtcdRepository+":"+v, ociimage.EtcdSpec(filepath.Join(cache, "etcd-"+v))))
	}
	if s.Operator != "" {
		ca := s.CABundle
		if ca == "" {
			ca = hostCABundle
			if _, err := os.Stat(ca); err != nil {
				ca = os.DevNull // an empty bundle: the bench's S3 store is plain HTTP
			}
		}
		name := s.OperatorImage
		if name == "" {
			name = DefaultOperatorImage
		}
		imgs = append(imgs, fromSpec(name, ociimage.OperatorSpec(s.Operator, ca)))
	}
	root := s.RepoRoot
	if root == "" {
		if root, err = RepoRoot(); err != nil {
			return nil, err
		}
	}
	imgs = append(imgs, image{PauseImage, func() (v1.Image, error) { return pauseImage(root) }})
	if !s.NoCoreDNS {
		bin := filepath.Join(cache, "coredns-"+CoreDNSVersion, "coredns")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("CoreDNS is not in the tool cache (run hack/tools.sh coredns): %w", err)
		}
		imgs = append(imgs, fromSpec(CoreDNSImage, ociimage.Spec{
			Files: []ociimage.File{{Path: CoreDNSBinary, Source: bin, Mode: 0o755}},
			// Non-root as upstream's image; the bench's CoreDNS listens on a high port.
			User:       ociimage.NonRootUser,
			Entrypoint: []string{CoreDNSBinary},
		}))
	}
	if s.OLM {
		olm, err := olmImages(cache)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, olm...)
	}
	return imgs, nil
}

// fromSpec builds spec for this machine's architecture, after checking that every
// executable in it is static.
func fromSpec(name string, spec ociimage.Spec) image {
	spec.OS, spec.Architecture = "linux", runtime.GOARCH
	return image{name, func() (v1.Image, error) {
		for _, f := range spec.Files {
			if !f.Dir && f.Mode&0o111 != 0 {
				if err := ociimage.CheckStatic(f.Source); err != nil {
					return nil, err
				}
			}
		}
		if dir := os.Getenv(LayerCacheEnv); dir != "" {
			return ociimage.BuildWithLayerCache(spec, dir)
		}
		return ociimage.Build(spec)
	}}
}

// LayerCacheEnv names a directory where the bench keeps its images' compressed layers
// (ociimage.BuildWithLayerCache), so that test processes started one after another
// (hack/go-test-shards.sh runs one per test) compress each layer once; unset, every
// process compresses its own.
const LayerCacheEnv = "ETCD_OPERATOR_BENCH_LAYER_CACHE"

// pauseImage builds test/cmd/pause into a temporary directory and makes its image,
// once per process and checkout.
func pauseImage(root string) (v1.Image, error) {
	pause.mu.Lock()
	defer pause.mu.Unlock()
	if img, ok := pause.built[root]; ok {
		return img, nil
	}
	dir, err := os.MkdirTemp("", "bench-pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // Build reads the files into the layer
	bin, err := BuildPause(root, dir)
	if err != nil {
		return nil, err
	}
	img, err := ociimage.Build(ociimage.Spec{
		Files:      []ociimage.File{{Path: PauseBinary, Source: bin, Mode: 0o755}},
		User:       pauseUser,
		Entrypoint: []string{PauseBinary},
		OS:         "linux", Architecture: runtime.GOARCH,
	})
	if err != nil {
		return nil, err
	}
	if pause.built == nil {
		pause.built = map[string]v1.Image{}
	}
	pause.built[root] = img
	return img, nil
}

var pause struct {
	mu    sync.Mutex
	built map[string]v1.Image // by checkout
}
