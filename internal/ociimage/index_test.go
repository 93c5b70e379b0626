package ociimage

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// twoArchOperatorIndex builds an operator image for amd64 and for arm64 from files in
// dir and the index over both, as make release does.
func twoArchOperatorIndex(t *testing.T, dir string) ([]v1.Image, v1.ImageIndex) {
	t.Helper()
	var imgs []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		spec := OperatorSpec(writeFile(t, dir, "manager-"+arch, arch), writeFile(t, dir, "ca", "c"))
		spec.Architecture = arch
		img, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs...)
	if err != nil {
		t.Fatal(err)
	}
	return imgs, idx
}

// TestPushLayoutPushesEveryNamedEntry: a layout holding an index and an image, as a
// release's images/ does, is pushed entry by entry to the names it carries, and the
// registry then serves each under that name with the same digest; the index's
// platforms come from its images' configs.
func TestPushLayoutPushesEveryNamedEntry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	imgs, idx := twoArchOperatorIndex(t, dir)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("index platforms %v", platforms)
	}
	out := filepath.Join(dir, "layout")
	if err := WriteIndexLayout(out, reg+"/op:v1", idx); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(out, reg+"/op-bundle:v1", imgs[0]); err != nil {
		t.Fatal(err)
	}
	pushed, err := PushLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	imgDigest, _ := imgs[0].Digest()
	want := []string{reg + "/op:v1@" + idxDigest.String(), reg + "/op-bundle:v1@" + imgDigest.String()}
	if !slices.Equal(pushed, want) {
		t.Errorf("pushed %v, want %v", pushed, want)
	}
	r, _ := name.ParseReference(reg+"/op:v1", name.Insecure)
	got, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != idxDigest {
		t.Errorf("the registry serves index %s, pushed %s", d, idxDigest)
	}
	r, _ = name.ParseReference(reg+"/op-bundle:v1", name.Insecure)
	gotImg, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := gotImg.Digest(); d != imgDigest {
		t.Errorf("the registry serves image %s, pushed %s", d, imgDigest)
	}
}

// TestPushLayoutRefusesAnUnnamedEntry: an entry with no reference has nowhere to go;
// pushing it somewhere invented would be worse than stopping.
func TestPushLayoutRefusesAnUnnamedEntry(t *testing.T) {
	dir := t.TempDir()
	img, err := Build(OperatorSpec(writeFile(t, dir, "manager", "m"), writeFile(t, dir, "ca", "c")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	if _, err := PushLayout(filepath.Join(dir, "layout")); err == nil || !strings.Contains(err.Error(), RefNameAnnotation) {
		t.Fatalf("err %v, want the missing name reported", err)
	}
}

// TestIndexRefusesTwoImagesOfOnePlatform: a runtime would pick either.
func TestIndexRefusesTwoImagesOfOnePlatform(t *testing.T) {
	dir := t.TempDir()
	a, _ := Build(OperatorSpec(writeFile(t, dir, "a", "a"), writeFile(t, dir, "ca", "c")))
	b, _ := Build(OperatorSpec(writeFile(t, dir, "b", "b"), writeFile(t, dir, "ca", "c")))
	if _, err := Index(a, b); err == nil || !strings.Contains(err.Error(), "linux/amd64") {
		t.Fatalf("err %v, want two linux/amd64 images refused", err)
	}
}
