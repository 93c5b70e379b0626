package images

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

func TestDefaultOperatorImageIsTheControllers(t *testing.T) {
	if DefaultOperatorImage != operatorimage.Default {
		t.Fatalf("DefaultOperatorImage %q, controllers say %q", DefaultOperatorImage, operatorimage.Default)
	}
}

// pull fetches image (its real name) from the registry the way a mirrored containerd
// does: the registry's address with the real name's repository path.
func pull(t *testing.T, reg, image string) v1.Image {
	t.Helper()
	mirrored, err := MirrorRef(reg, image)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(mirrored, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pull %s as %s: %v", image, mirrored, err)
	}
	return img
}

// files lists an image's filesystem: path -> mode and size.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+filepath.Clean(h.Name)] = h
	}
}

func wantExecutable(t *testing.T, image string, fs map[string]*tar.Header, p string, source string) {
	t.Helper()
	h := fs[p]
	if h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
		t.Errorf("%s: %s is not an executable file: %+v", image, p, h)
		return
	}
	if st, err := os.Stat(source); err == nil && st.Size() != h.Size {
		t.Errorf("%s: %s has %d bytes, %s has %d", image, p, h.Size, source, st.Size())
	}
}

func wantConfig(t *testing.T, image string, img v1.Image, entrypoint, cmd []string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("%s: platform %s/%s, want linux/%s", image, cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cfg.Config.Entrypoint, entrypoint) || !slices.Equal(cfg.Config.Cmd, cmd) {
		t.Errorf("%s: entrypoint %q cmd %q, want %q %q", image, cfg.Config.Entrypoint, cfg.Config.Cmd, entrypoint, cmd)
	}
}

func TestPushedSetPullsUnderMirroredNames(t *testing.T) {
	cache := testenv.CacheDir()
	versions, _ := EtcdVersions(cache)
	if len(versions) == 0 {
		testenv.Missing(t, "no etcd-vX.Y.Z in %s; run hack/tools.sh etcd", cache)
	}
	coredns := filepath.Join(cache, "coredns-"+CoreDNSVersion, "coredns")
	_, noCoreDNS := os.Stat(coredns)

	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	operator, err := BuildOperator(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator built in %v", time.Since(t0))

	r := serve(t, RegistryOptions{BlobDir: t.TempDir()})
	set := Set{CacheDir: cache, Operator: operator, OperatorImage: "etcd-operator:v9.9.9", NoCoreDNS: noCoreDNS != nil}
	t0 = time.Now()
	pushed, err := set.Push(r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %v in %v", pushed, time.Since(t0))

	want := []string{}
	for _, v := range versions {
		want = append(want, EtcdRepository+":"+v)
	}
	want = append(want, "etcd-operator:v9.9.9", PauseImage)
	if noCoreDNS == nil {
		want = append(want, CoreDNSImage)
	}
	if !slices.Equal(pushed, want) {
		t.Errorf("pushed %v, want %v", pushed, want)
	}

	for _, v := range versions {
		image := EtcdRepository + ":" + v
		img := pull(t, r.Addr(), image)
		fs := files(t, img)
		for _, tool := range []string{"etcd", "etcdctl", "etcdutl"} {
			wantExecutable(t, image, fs, "/usr/local/bin/"+tool, filepath.Join(cache, "etcd-"+v, tool))
		}
		wantConfig(t, image, img, nil, []string{"/usr/local/bin/etcd"})
	}

	img := pull(t, r.Addr(), "etcd-operator:v9.9.9")
	fs := files(t, img)
	wantExecutable(t, "operator", fs, "/manager", operator)
	if fs["/etc/ssl/certs/ca-certificates.crt"] == nil {
		t.Error("operator image has no CA bundle")
	}
	wantConfig(t, "operator", img, []string{"/manager"}, nil)

	img = pull(t, r.Addr(), PauseImage)
	wantExecutable(t, PauseImage, files(t, img), PauseBinary, "")
	wantConfig(t, PauseImage, img, []string{PauseBinary}, nil)

	if noCoreDNS != nil {
		testenv.Missing(t, "CoreDNS image not checked (run hack/tools.sh coredns): %v", noCoreDNS)
	}
	img = pull(t, r.Addr(), CoreDNSImage)
	wantExecutable(t, CoreDNSImage, files(t, img), CoreDNSBinary, coredns)
	wantConfig(t, CoreDNSImage, img, []string{CoreDNSBinary}, nil)

	// Pushing again (a second bench in the same process) reuses the built images.
	r2 := serve(t, RegistryOptions{})
	t0 = time.Now()
	if _, err := set.Push(r2.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed again to an empty registry in %v", time.Since(t0))
}

func TestSetRefusesDynamicBinaries(t *testing.T) {
	dynamic := "/bin/ls"
	if _, err := os.Stat(dynamic); err != nil {
		t.Skip("no /bin/ls")
	}
	cache := t.TempDir()
	dir := filepath.Join(cache, "etcd-v3.0.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dynamic)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"etcd", "etcdctl", "etcdutl"} {
		if err := os.WriteFile(filepath.Join(dir, tool), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := serve(t, RegistryOptions{})
	_, err = Set{CacheDir: cache, NoCoreDNS: true}.Push(r.Addr())
	if err == nil {
		t.Fatal("pushed an etcd image made of a dynamically linked executable")
	}
	t.Log(err)
}

func TestSetNeedsEtcdInTheCache(t *testing.T) {
	if _, err := (Set{CacheDir: t.TempDir(), NoCoreDNS: true}).Push("127.0.0.1:1"); err == nil {
		t.Fatal("no error for a cache without etcd")
	}
}
