package images

import (
	"archive/tar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// requireOLM returns the tool cache when hack/tools.sh olm has filled it.
func requireOLM(t *testing.T) string {
	t.Helper()
	cache := testenv.CacheDir()
	testenv.Require(t, filepath.Join("olm-"+OLMVersion, ".done"))
	testenv.Require(t, filepath.Join("opm-"+OPMVersion, ".done"))
	return cache
}

func TestOLMImagesHaveUpstreamsLayout(t *testing.T) {
	cache := requireOLM(t)
	imgs, err := olmImages(cache)
	if err != nil {
		t.Fatal(err)
	}
	r := serve(t, RegistryOptions{BlobDir: t.TempDir()})
	t0 := time.Now()
	for _, im := range imgs {
		if err := push(r.Addr(), im); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built and pushed %s and %s in %v", OLMImage, OPMImage, time.Since(t0))

	img := pull(t, r.Addr(), OLMImage)
	fs := files(t, img)
	for _, b := range []string{"olm", "catalog", "cpb", "copy-content", "cp"} {
		wantExecutable(t, OLMImage, fs, "/bin/"+b, filepath.Join(olmDir(cache), b))
	}
	wantConfig(t, OLMImage, img, []string{OLMBinary}, nil)
	wantUserAndPath(t, OLMImage, img)
	wantStickyTmp(t, OLMImage, fs)

	img = pull(t, r.Addr(), OPMImage)
	fs = files(t, img)
	wantExecutable(t, OPMImage, fs, OPMBinary, filepath.Join(opmDir(cache), "opm"))
	wantExecutable(t, OPMImage, fs, "/bin/grpc_health_probe", filepath.Join(opmDir(cache), "grpc_health_probe"))
	wantConfig(t, OPMImage, img, []string{OPMBinary}, nil)
	wantUserAndPath(t, OPMImage, img)
	wantStickyTmp(t, OPMImage, fs)
}

// wantUserAndPath checks the image runs as upstream's user 1001 and finds /bin on PATH
// (the unpack Job runs `opm`, catalog probes `grpc_health_probe`, both without a path).
func wantUserAndPath(t *testing.T, image string, img v1.Image) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != olmUser {
		t.Errorf("%s: user %q, want %q", image, cfg.Config.User, olmUser)
	}
	i := slices.IndexFunc(cfg.Config.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") })
	if i < 0 || !slices.Contains(strings.Split(strings.TrimPrefix(cfg.Config.Env[i], "PATH="), ":"), "/bin") {
		t.Errorf("%s: env %q has no PATH with /bin", image, cfg.Config.Env)
	}
}

func wantStickyTmp(t *testing.T, image string, fs map[string]*tar.Header) {
	t.Helper()
	if h := fs["/tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o1777 != 0o1777 {
		t.Errorf("%s: /tmp is not a world-writable sticky directory: %+v", image, h)
	}
}

// TestCachedCpCopiesAsTheUnpackJobAsks runs the cp that goes into OLMImage exactly as
// catalog-operator's bundle unpack Job runs it.
func TestCachedCpCopiesAsTheUnpackJobAsks(t *testing.T) {
	cache := requireOLM(t)
	util := filepath.Join(t.TempDir(), "util")
	if err := os.Mkdir(util, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(olmDir(cache), "cpb")
	out, err := exec.Command(filepath.Join(olmDir(cache), "cp"), "-Rv", src, filepath.Join(util, "cpb")).CombinedOutput()
	if err != nil {
		t.Fatalf("cp -Rv: %v\n%s", err, out)
	}
	want, _ := os.Stat(src)
	got, err := os.Stat(filepath.Join(util, "cpb"))
	if err != nil || got.Size() != want.Size() || got.Mode().Perm()&0o111 == 0 {
		t.Fatalf("copied cpb: %v, %v; want %d bytes, executable", got, err, want.Size())
	}
}

func TestSetIncludesOLMOnlyWhenAsked(t *testing.T) {
	cache := t.TempDir()
	if err := os.Mkdir(filepath.Join(cache, "etcd-v3.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	imgs, err := Set{CacheDir: cache, NoCoreDNS: true}.images()
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range imgs {
		if im.name == OLMImage || im.name == OPMImage {
			t.Errorf("%s in a set without OLM", im.name)
		}
	}
	_, err = Set{CacheDir: cache, NoCoreDNS: true, OLM: true}.images()
	if err == nil || !strings.Contains(err.Error(), "hack/tools.sh olm") {
		t.Fatalf("a set with OLM and no OLM in the cache: %v", err)
	}
	for _, d := range []string{olmDir(cache), opmDir(cache)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imgs, err = Set{CacheDir: cache, NoCoreDNS: true, OLM: true}.images()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, im := range imgs {
		names = append(names, im.name)
	}
	if n := len(names); n < 2 || names[n-2] != OLMImage || names[n-1] != OPMImage {
		t.Errorf("set with OLM: %v, want it to end with %s, %s", names, OLMImage, OPMImage)
	}
}

func TestPushOLMPushesOnlyOLMsImages(t *testing.T) {
	r := serve(t, RegistryOptions{BlobDir: t.TempDir()})
	if _, err := PushOLM(r.Addr(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "hack/tools.sh olm") {
		t.Errorf("PushOLM without OLM in the cache: %v", err)
	}
	cache := requireOLM(t)
	pushed, err := PushOLM(r.Addr(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pushed, []string{OLMImage, OPMImage}) {
		t.Errorf("pushed %v", pushed)
	}
	wantExecutable(t, OPMImage, files(t, pull(t, r.Addr(), OPMImage)), OPMBinary, filepath.Join(opmDir(cache), "opm"))
}

func TestPushImageServesItUnderItsPodName(t *testing.T) {
	r := serve(t, RegistryOptions{})
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	const name = BenchHost + "/some-catalog:v1"
	if err := PushImage(r.Addr(), name, img); err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := pull(t, r.Addr(), name).Digest(); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
}
