package ociimage

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Pull fetches the image ref names, for the current platform when ref is an index,
// logged in as the docker config says (loginFromConfig, as Push): a bundle or catalog
// image in a private registry needs the same login as pushing it did. A registry on a
// loopback or private address is spoken to over plain HTTP, the registries containerd is
// usually configured to mirror to.
func Pull(ctx context.Context, ref string) (v1.Image, error) {
	return pull(ctx, ref, loginFromConfig())
}

// PullAnonymous is Pull without reading any login (the test bench's own registry; see
// PushAnonymous).
func PullAnonymous(ctx context.Context, ref string) (v1.Image, error) {
	return pull(ctx, ref, remote.WithAuth(authn.Anonymous))
}

func pull(ctx context.Context, ref string, auth remote.Option) (v1.Image, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := remote.Image(r, remote.WithContext(ctx), auth)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	return img, nil
}
