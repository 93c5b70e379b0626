package ociimage

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WriteTarball writes img as a `docker load` / `podman load` / `ctr images import`
// archive tagged ref.
func WriteTarball(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return tarball.WriteToFile(file, tag, img)
}

// WriteLayout writes img into an OCI image layout directory (created if missing),
// annotated with ref as its name.
func WriteLayout(dir, ref string, img v1.Image) error {
	p, err := openLayout(dir)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{RefNameAnnotation: ref}))
}

// Push uploads img to the registry named in ref. A registry on a loopback address or
// "localhost" is spoken to over plain HTTP, as container runtimes do for local mirrors.
func Push(ref string, img v1.Image) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return remote.Write(r, img)
}
