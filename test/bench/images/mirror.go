package images

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

// MirrorRef is where image, a name as pods spell it, is stored in the registry at
// registryAddr (host:port) so that a containerd mirror finds it. A mirror rewrites only
// the host of a pull and keeps the repository path, so the path is the one the normalized
// name has: quay.io/coreos/etcd:v3.6.16 -> <addr>/coreos/etcd:v3.6.16, and an unqualified
// etcd-operator:v0.2.0 (the default registry's library/etcd-operator) ->
// <addr>/library/etcd-operator:v0.2.0. A digest reference keeps its digest. The bench's
// containerd mirrors every registry ("*") to the bench registry.
func MirrorRef(registryAddr, image string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", image, err)
	}
	sep := ":"
	if _, ok := ref.(name.Digest); ok {
		sep = "@"
	}
	return registryAddr + "/" + ref.Context().RepositoryStr() + sep + ref.Identifier(), nil
}
