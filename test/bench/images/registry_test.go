package images

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

func serve(t *testing.T, o RegistryOptions) *Registry {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Serve(l, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRegistryServesWhatWasPushedAndStopsOnClose(t *testing.T) {
	var logBuf bytes.Buffer
	blobs := filepath.Join(t.TempDir(), "blobs")
	r := serve(t, RegistryOptions{BlobDir: blobs, Log: &logBuf})
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Addr() + "/some/repo:v1"
	if err := ociimage.Push(ref, img); err != nil {
		t.Fatal(err)
	}
	parsed, _ := name.ParseReference(ref, name.Insecure)
	pulled, err := remote.Image(parsed)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
	layers, _ := img.Layers()
	d, _ := layers[0].Digest()
	if _, err := os.Stat(filepath.Join(blobs, d.Algorithm, d.Hex)); err != nil {
		t.Errorf("layer blob not on disk: %v", err)
	}
	// containerd asks a mirror with the upstream host in a query parameter.
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.Addr()+"/v2/some/repo/manifests/v1?ns=quay.io", nil)
	req.Header.Set("Accept", string(types.OCIManifestSchema1)+", "+string(types.DockerManifestSchema2))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Content-Digest") != want.String() {
		t.Errorf("mirror-style GET: %s, digest %q, want %s", resp.Status, resp.Header.Get("Docker-Content-Digest"), want)
	}
	if !strings.Contains(logBuf.String(), "/v2/some/repo/manifests/v1") {
		t.Errorf("request log lacks the manifest request:\n%s", logBuf.String())
	}

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Image(parsed); err == nil {
		t.Error("pulled from a closed registry")
	}
}
