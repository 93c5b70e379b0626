package ociimage

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
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

// loginFromConfig makes a push log in as `docker login` / `podman login` left it for the
// registry: $DOCKER_CONFIG/config.json or ~/.docker/config.json (its auths and credential
// helpers), else podman's auth.json ($REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers);
// a registry none of them names gets an anonymous push.
func loginFromConfig() remote.Option { return remote.WithAuthFromKeychain(authn.DefaultKeychain) }

// Push uploads img to the registry named in ref, logged in as the docker config says
// (loginFromConfig). A registry on a loopback address or "localhost" is spoken to over
// plain HTTP, as container runtimes do for local mirrors.
func Push(ref string, img v1.Image) error {
	return push(ref, img, loginFromConfig())
}

// PushAnonymous is Push without reading any login, for a registry that asks for none and a
// caller that must not depend on the machine's credential configuration (the test bench's
// own registry: a credential helper the config names could fail or prompt).
func PushAnonymous(ref string, img v1.Image) error {
	return push(ref, img, remote.WithAuth(authn.Anonymous))
}

func push(ref string, img v1.Image, auth remote.Option) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return remote.Write(r, img, auth)
}
