package images

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// OLM's images, from hack/tools.sh's olm target (OLM_VERSION, OPM_VERSION). They are laid
// out as upstream's are, because OLM names paths inside them: catalog-operator's bundle
// unpack Job runs `/bin/cp -Rv /bin/cpb /util/cpb` in the OLM image (its --util-image)
// and `opm alpha bundle extract` (found on PATH) in the opm image (its --opmImage), and a
// catalog pod is probed with `grpc_health_probe -addr=:50051` (on PATH) in the catalog
// image, which upstream builds FROM the opm image.
const (
	// OLMVersion is the cached OLM v0 release.
	OLMVersion = "v0.36.0"
	// OPMVersion is the cached operator-registry release (opm).
	OPMVersion = "v1.60.0"
	// OLMImage holds olm-operator and catalog-operator and their helpers.
	OLMImage = BenchHost + "/olm:" + OLMVersion
	// OPMImage is the base of catalog images and catalog-operator's --opmImage.
	OPMImage = BenchHost + "/opm:" + OPMVersion
	// OLMBinary and CatalogBinary are the commands of upstream's olm-operator and
	// catalog-operator Deployments.
	OLMBinary     = "/bin/olm"
	CatalogBinary = "/bin/catalog"
	// OPMBinary is the opm image's entrypoint; a catalog image runs
	// `OPMBinary serve /configs --cache-dir=/tmp/cache`.
	OPMBinary = "/bin/opm"
	// olmUser is the user of upstream's OLM and opm images.
	olmUser = "1001"
	// searchPath is the PATH of the distroless base upstream's images start from; the
	// unpack Job and the catalog probes name opm and grpc_health_probe without a path.
	searchPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// olmDir and opmDir are hack/tools.sh's cache directories of OLMVersion and OPMVersion.
func olmDir(cache string) string { return filepath.Join(cache, "olm-"+OLMVersion) }
func opmDir(cache string) string { return filepath.Join(cache, "opm-"+OPMVersion) }

// OLMChartDir is upstream's install chart (deploy/chart of the OLM module), which
// hack/tools.sh copies into the cache beside the binaries.
func OLMChartDir(cache string) string { return filepath.Join(olmDir(cache), "chart") }

// OLMReleaseValues is upstream's deploy/upstream/values.yaml: the values its releases
// render OLMChartDir with.
func OLMReleaseValues(cache string) string {
	return filepath.Join(olmDir(cache), "upstream-values.yaml")
}

// olmImages are OLMImage and OPMImage, from the binaries in the tool cache.
func olmImages(cache string) ([]image, error) {
	for _, d := range []string{olmDir(cache), opmDir(cache)} {
		if _, err := os.Stat(filepath.Join(d, ".done")); err != nil {
			return nil, fmt.Errorf("OLM is not in the tool cache (run hack/tools.sh olm): %w", err)
		}
	}
	return []image{
		fromSpec(OLMImage, olmSpec(olmDir(cache))),
		fromSpec(OPMImage, opmSpec(opmDir(cache))),
	}, nil
}

// PushOLM pushes only OLMImage and OPMImage (built from the tool cache cacheDir, default
// testenv.CacheDir()) to the registry at registryAddr: for a registry that already serves
// a Set without OLM, so that benches without OLM never pay for its images.
func PushOLM(registryAddr, cacheDir string) ([]string, error) {
	if cacheDir == "" {
		cacheDir = testenv.CacheDir()
	}
	imgs, err := olmImages(cacheDir)
	if err != nil {
		return nil, err
	}
	return pushAll(registryAddr, imgs)
}

// olmSpec is upstream's OLM image without its package-server (the PackageManifest API,
// which no install path here uses): olm, catalog, the unpack Job's cpb and cp, and the
// catalog pods' copy-content.
func olmSpec(dir string) ociimage.Spec {
	var files []ociimage.File
	for _, b := range []string{"olm", "catalog", "cpb", "copy-content", "cp"} {
		files = append(files, ociimage.File{Path: "/bin/" + b, Source: filepath.Join(dir, b), Mode: 0o755})
	}
	files = append(files, ociimage.File{Path: "/tmp", Dir: true, Mode: 0o777 | os.ModeSticky})
	return ociimage.Spec{
		Files:      files,
		User:       olmUser,
		Env:        []string{searchPath},
		WorkingDir: "/",
		Entrypoint: []string{OLMBinary},
	}
}

// opmSpec is upstream's opm image: opm and grpc_health_probe, and a writable /tmp for
// `opm serve --cache-dir=/tmp/cache`.
func opmSpec(dir string) ociimage.Spec {
	return ociimage.Spec{
		Files: []ociimage.File{
			{Path: OPMBinary, Source: filepath.Join(dir, "opm"), Mode: 0o755},
			{Path: "/bin/grpc_health_probe", Source: filepath.Join(dir, "grpc_health_probe"), Mode: 0o755},
			{Path: "/tmp", Dir: true, Mode: 0o777 | os.ModeSticky},
		},
		User:       olmUser,
		Env:        []string{searchPath},
		Entrypoint: []string{OPMBinary},
	}
}
