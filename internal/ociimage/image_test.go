package ociimage

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type entry struct {
	typ     byte
	mode    int64
	uid     int
	content string
}

// layerEntries reads the image's only layer back as path -> entry.
func layerEntries(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want exactly one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mtime %v, want the epoch (reproducible builds)", h.Name, h.ModTime)
		}
		got["/"+strings.TrimSuffix(h.Name, "/")] = entry{h.Typeflag, h.Mode, h.Uid, string(b)}
	}
}

func TestOperatorImageFilesystemAndConfig(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "manager", "binary")
	ca := writeFile(t, dir, "ca.crt", "certs")
	img, err := Build(OperatorSpec(bin, ca))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]entry{
		"/etc":                               {tar.TypeDir, 0o755, 0, ""},
		"/etc/ssl":                           {tar.TypeDir, 0o755, 0, ""},
		"/etc/ssl/certs":                     {tar.TypeDir, 0o755, 0, ""},
		"/etc/ssl/certs/ca-certificates.crt": {tar.TypeReg, 0o644, 0, "certs"},
		"/manager":                           {tar.TypeReg, 0o755, 0, "binary"},
		"/tmp":                               {tar.TypeDir, 0o1777, 0, ""},
	}
	got := layerEntries(t, img)
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s = %+v, want %+v", p, got[p], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("layer has %d entries, want %d: %v", len(got), len(want), got)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/manager"}) ||
		cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("config user %q entrypoint %v platform %s/%s", cfg.Config.User, cfg.Config.Entrypoint, cfg.OS, cfg.Architecture)
	}
}

func TestBuildIsReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "manager", "binary")
	ca := writeFile(t, dir, "ca.crt", "certs")
	digest := func() v1.Hash {
		img, err := Build(OperatorSpec(bin, ca))
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest()
	if again := digest(); again != first {
		t.Fatalf("same input, digests %s and %s", first, again)
	}
	writeFile(t, dir, "manager", "binarY")
	if changed := digest(); changed == first {
		t.Fatal("a changed binary kept the same digest")
	}
}

func TestBuildRefusesBadSpecs(t *testing.T) {
	src := writeFile(t, t.TempDir(), "f", "x")
	for name, files := range map[string][]File{
		"relative path":       {{Path: "manager", Source: src, Mode: 0o755}},
		"root":                {{Path: "/", Dir: true}},
		"file without source": {{Path: "/manager", Mode: 0o755}},
		"dir with source":     {{Path: "/d", Dir: true, Source: src}},
		"twice":               {{Path: "/a", Source: src}, {Path: "/a/", Source: src}},
	} {
		if _, err := Build(Spec{Files: files}); err == nil {
			t.Errorf("%s: built, want an error", name)
		}
	}
}

// dockerfileFinalStage reads what the Dockerfile's last stage puts in the image.
func dockerfileFinalStage(t *testing.T) (copies []string, user string, entrypoint []string) {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			copies, user, entrypoint = nil, "", nil
		case "COPY":
			copies = append(copies, fields[len(fields)-1])
		case "USER":
			user = fields[1]
		case "ENTRYPOINT":
			raw := strings.TrimSpace(strings.TrimPrefix(sc.Text(), fields[0]))
			if err := json.Unmarshal([]byte(raw), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: %v", raw, err)
			}
		}
	}
	return copies, user, entrypoint
}

// The offline builder and `docker build` must make the same image: same files, user and
// entrypoint. A change to one without the other fails here.
func TestOperatorSpecMatchesDockerfile(t *testing.T) {
	copies, user, entrypoint := dockerfileFinalStage(t)
	spec := OperatorSpec("bin", "ca")
	var paths []string
	for _, f := range spec.Files {
		paths = append(paths, f.Path)
	}
	slices.Sort(copies)
	slices.Sort(paths)
	if !slices.Equal(copies, paths) {
		t.Errorf("Dockerfile copies %v, OperatorSpec has %v", copies, paths)
	}
	if user != spec.User || !slices.Equal(entrypoint, spec.Entrypoint) {
		t.Errorf("Dockerfile USER %q ENTRYPOINT %v, OperatorSpec %q %v", user, entrypoint, spec.User, spec.Entrypoint)
	}
}

func TestWriteTarballAndLayoutRoundTrip(t *testing.T) {
	dir := t.TempDir()
	img, err := Build(OperatorSpec(writeFile(t, dir, "manager", "b"), writeFile(t, dir, "ca", "c")))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()

	tarPath := filepath.Join(dir, "image.tar")
	if err := WriteTarball(tarPath, "etcd-operator:v0.0.1", img); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("etcd-operator:v0.0.1")
	fromTar, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// A docker-load archive keeps the config (the image ID) and layers, not the manifest.
	wantID, _ := img.ConfigName()
	if got, _ := fromTar.ConfigName(); got != wantID {
		t.Errorf("tarball image ID %s, built %s", got, wantID)
	}

	ociDir := filepath.Join(dir, "oci")
	if err := WriteLayout(ociDir, "etcd-operator:v0.0.1", img); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(ociDir)
	if err != nil {
		t.Fatal(err)
	}
	fromLayout, err := p.Image(want)
	if err != nil {
		t.Fatalf("layout has no image %s: %v", want, err)
	}
	if got := layerEntries(t, fromLayout)["/manager"].content; got != "b" {
		t.Errorf("/manager from the layout = %q", got)
	}
}

// Push and Pull speak the registry protocol to a real registry server on loopback, and
// the image pulled back is the one built.
func TestPushToLoopbackRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	dir := t.TempDir()
	img, err := Build(OperatorSpec(writeFile(t, dir, "manager", "b"), writeFile(t, dir, "ca", "c")))
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/etcd-operator:v0.0.1"
	if err := Push(ref, img); err != nil {
		t.Fatal(err)
	}
	pulled, err := Pull(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
}

func TestCheckStatic(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "main.go", "package main\nfunc main() {}\n")
	bin := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := CheckStatic(bin); err != nil {
		t.Errorf("static Go binary: %v", err)
	}
	// The machine's own tools are linked against its C library.
	dynamic, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls on PATH")
	}
	if err := CheckStatic(dynamic); !errors.Is(err, ErrNotStatic) {
		t.Errorf("%s: err = %v, want ErrNotStatic", dynamic, err)
	}
	if err := CheckStatic(src); err == nil {
		t.Error("a Go source file passed as an executable")
	}
}

func TestEtcdImageHasTheThreeToolsOnPath(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"etcd", "etcdctl", "etcdutl"} {
		writeFile(t, dir, tool, tool+" binary")
	}
	img, err := Build(EtcdSpec(dir))
	if err != nil {
		t.Fatal(err)
	}
	got := layerEntries(t, img)
	for _, tool := range []string{"etcd", "etcdctl", "etcdutl"} {
		if e := got["/usr/local/bin/"+tool]; e.content != tool+" binary" || e.mode != 0o755 {
			t.Errorf("/usr/local/bin/%s = %+v", tool, e)
		}
	}
	cfg, _ := img.ConfigFile()
	if !slices.Contains(cfg.Config.Env, "PATH=/usr/local/bin:/usr/bin:/bin") || !slices.Equal(cfg.Config.Cmd, []string{"/usr/local/bin/etcd"}) {
		t.Errorf("env %v cmd %v", cfg.Config.Env, cfg.Config.Cmd)
	}
	if _, err := Build(EtcdSpec(t.TempDir())); err == nil {
		t.Error("built an etcd image from an empty directory")
	}
}

// TestBuildWithLayerCacheReusesTheCompressedLayer: the cached build holds the same files
// and config as Build (same DiffID and config), compresses a layer once however often it
// is built, and a changed file is a new layer.
func TestBuildWithLayerCacheReusesTheCompressedLayer(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	bin := writeFile(t, dir, "manager", "binary")
	ca := writeFile(t, dir, "ca.crt", "certs")
	diffAndDigest := func(build func(Spec) (v1.Image, error)) (v1.Hash, v1.Hash) {
		t.Helper()
		img, err := build(OperatorSpec(bin, ca))
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers %v, %v", layers, err)
		}
		diff, err := layers[0].DiffID()
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return diff, d
	}
	cached := func(s Spec) (v1.Image, error) { return BuildWithLayerCache(s, cache) }
	plainDiff, _ := diffAndDigest(Build)
	firstDiff, first := diffAndDigest(cached)
	if firstDiff != plainDiff {
		t.Errorf("cached layer's content %s, Build's %s", firstDiff, plainDiff)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.tar.gz"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v, want one layer", files)
	}
	st, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, again := diffAndDigest(cached); again != first {
		t.Errorf("same input, digests %s and %s", first, again)
	}
	if st2, err := os.Stat(files[0]); err != nil || !st2.ModTime().Equal(st.ModTime()) || st2.Size() != st.Size() {
		t.Errorf("the cached layer was written again: %v → %v (%v)", st.ModTime(), st2.ModTime(), err)
	}
	writeFile(t, dir, "manager", "binarY")
	if changedDiff, changed := diffAndDigest(cached); changed == first || changedDiff == firstDiff {
		t.Error("a changed binary kept the same layer")
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "*.tar.gz")); len(files) != 2 {
		t.Errorf("cache holds %v after a change, want two layers", files)
	}
}
