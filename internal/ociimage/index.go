package ociimage

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RefNameAnnotation names an image in an OCI layout's index.json (as crane and
// skopeo's oci: transport read it); WriteLayout and WriteIndexLayout set it to the
// full reference the image is pushed as.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Index is an OCI image index of imgs, one manifest per platform, each descriptor's
// platform read from the image's own config so the two cannot disagree. Two images of
// the same platform are refused: a runtime would pick either.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, img := range imgs {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("an image of the index names no os/architecture in its config")
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for platform %s", p.String())
		}
		seen[p.String()] = true
		mt, err := img.MediaType()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: mt, Platform: &p},
		})
	}
	return idx, nil
}

// WriteIndexLayout writes idx into an OCI image layout directory (created if
// missing), annotated with ref as its name, beside whatever images it holds.
func WriteIndexLayout(dir, ref string, idx v1.ImageIndex) error {
	p, err := openLayout(dir)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: ref}))
}

// openLayout opens the OCI layout in dir, writing an empty one first if there is none.
func openLayout(dir string) (layout.Path, error) {
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return layout.FromPath(dir)
	}
	return layout.Write(dir, empty.Index)
}

// PushIndex uploads idx and every image in it to the registry named in ref, logged in
// and over plain HTTP for loopback registries as Push does.
func PushIndex(ref string, idx v1.ImageIndex) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return remote.WriteIndex(r, idx, loginFromConfig())
}

// ReadLayout opens the OCI layout in dir: its top index (index.json) and that index's
// manifest, which lists the layout's entries.
func ReadLayout(dir string) (v1.ImageIndex, *v1.IndexManifest, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	return top, m, nil
}

// PushLayout pushes every image and index of the OCI layout in dir that carries a
// RefNameAnnotation to the reference it names, as Push and PushIndex do (logged in as
// the docker config says), and returns those references with their digests
// (ref@sha256:…). An entry without a name is an error: it has nowhere to go.
func PushLayout(dir string) ([]string, error) {
	top, m, err := ReadLayout(dir)
	if err != nil {
		return nil, err
	}
	var pushed []string
	for _, d := range m.Manifests {
		ref := d.Annotations[RefNameAnnotation]
		if ref == "" {
			return pushed, fmt.Errorf("%s: %s has no %s annotation", dir, d.Digest, RefNameAnnotation)
		}
		var err error
		switch {
		case d.MediaType.IsIndex():
			var idx v1.ImageIndex
			if idx, err = top.ImageIndex(d.Digest); err == nil {
				err = PushIndex(ref, idx)
			}
		case d.MediaType.IsImage():
			var img v1.Image
			if img, err = top.Image(d.Digest); err == nil {
				err = Push(ref, img)
			}
		default:
			return pushed, fmt.Errorf("%s: %s has media type %s, neither an image nor an index", dir, ref, d.MediaType)
		}
		if err != nil {
			return pushed, fmt.Errorf("push %s: %w", ref, err)
		}
		pushed = append(pushed, ref+"@"+d.Digest.String())
	}
	return pushed, nil
}
