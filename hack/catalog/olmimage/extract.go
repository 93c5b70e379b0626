package olmimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// maxBundleFile bounds one file read out of a bundle image: a CSV or CRD is at most a
// few hundred KiB, and a bundle image comes from whoever pushed it.
const maxBundleFile = 16 << 20

// ExtractBundle writes the registry+v1 bundle inside img (its flattened filesystem's
// /manifests and /metadata, the layout BundleSpec builds and bundle.Dockerfile copies)
// into dir, which must exist. Entries elsewhere are ignored; a bundle image is input
// from whoever pushed it, so only flat regular files directly under those two
// directories are written, never a path that leaves dir, and each file is size-bounded.
func ExtractBundle(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("bundle image: %w", err)
		}
		p := path.Clean("/" + h.Name)
		sub, base := path.Split(p)
		sub = strings.Trim(sub, "/")
		if (sub != "manifests" && sub != "metadata") || base == "" || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxBundleFile {
			return fmt.Errorf("bundle image: %s is %d bytes, more than a bundle file can be", p, h.Size)
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxBundleFile))
		if err != nil {
			return fmt.Errorf("bundle image: %s: %w", p, err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, base), data, 0o644); err != nil {
			return err
		}
		found[sub] = true
	}
	if !found["manifests"] || !found["metadata"] {
		return errors.New("bundle image: no /manifests or no /metadata: not a registry+v1 bundle")
	}
	_, err := Annotations(dir)
	return err
}
