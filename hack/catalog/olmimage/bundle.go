// Package olmimage lays out OLM's two image kinds without a container daemon: a bundle
// image (a registry+v1 bundle directory, as bundle.Dockerfile copies it) and a catalog
// image (a file-based catalog rendered with opm, served by opm, with its cache built in).
// The layouts are ociimage.Specs, so the images are reproducible and built by
// ociimage.Build like the operator's.
package olmimage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// Bundle is a registry+v1 bundle directory (manifests/ and metadata/annotations.yaml)
// and the image reference it is pushed as, which the catalog names.
type Bundle struct {
	Dir   string
	Image string
}

// Annotation keys of metadata/annotations.yaml that the catalog needs.
const (
	PackageAnnotation        = "operators.operatorframework.io.bundle.package.v1"
	ChannelsAnnotation       = "operators.operatorframework.io.bundle.channels.v1"
	DefaultChannelAnnotation = "operators.operatorframework.io.bundle.channel.default.v1"
)

// Annotations reads dir/metadata/annotations.yaml.
func Annotations(dir string) (map[string]string, error) {
	p := filepath.Join(dir, "metadata", "annotations.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if doc.Annotations[PackageAnnotation] == "" {
		return nil, fmt.Errorf("%s: no %s", p, PackageAnnotation)
	}
	return doc.Annotations, nil
}

// BundleSpec is the bundle image of dir: manifests/ and metadata/ at the image root and
// the annotations as labels, which is what bundle.Dockerfile builds (OLM reads the
// labels or the annotations file, whichever it finds).
func BundleSpec(dir string) (ociimage.Spec, error) {
	ann, err := Annotations(dir)
	if err != nil {
		return ociimage.Spec{}, err
	}
	var files []ociimage.File
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return ociimage.Spec{}, err
		}
		for _, e := range entries {
			if e.IsDir() {
				// registry+v1 bundles are flat; a subdirectory would be silently dropped.
				return ociimage.Spec{}, fmt.Errorf("%s: unexpected directory %s", sub, e.Name())
			}
			files = append(files, ociimage.File{
				Path: "/" + sub + "/" + e.Name(), Source: filepath.Join(dir, sub, e.Name()), Mode: 0o644,
			})
		}
	}
	slices.SortFunc(files, func(a, b ociimage.File) int { return strings.Compare(a.Path, b.Path) })
	return ociimage.Spec{Files: files, Labels: ann}, nil
}
