package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/testenv"
)

// Versions of the cached tools the bench runs (built by hack/tools.sh).
const (
	K8sVersion  = "v1.37.2"
	EtcdVersion = "v3.7.3" // the control plane's own etcd
)

// CacheDir is where hack/tools.sh caches binaries: $ETCD_OPERATOR_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator (the same rule as the script).
func CacheDir() string { return testenv.CacheDir() }

// K8sBinDir and EtcdBinDir are the cache folders of one version.
func K8sBinDir() string            { return filepath.Join(CacheDir(), "k8s-"+K8sVersion) }
func EtcdBinDir(ver string) string { return filepath.Join(CacheDir(), "etcd-"+ver) }

// MissingBinaries lists the control-plane binaries that are not in the cache yet.
func MissingBinaries() []string {
	var missing []string
	for _, p := range []string{
		filepath.Join(EtcdBinDir(EtcdVersion), "etcd"),
		filepath.Join(K8sBinDir(), "kube-apiserver"),
		filepath.Join(K8sBinDir(), "kube-controller-manager"),
		filepath.Join(K8sBinDir(), "kube-scheduler"),
	} {
		if !isExecutable(p) {
			missing = append(missing, p)
		}
	}
	return missing
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// etcdImage matches any image whose last path element is etcd with a vX.Y.Z tag, e.g.
// quay.io/coreos/etcd:v3.6.16 or gcr.io/etcd-development/etcd:v3.7.3 (a digest after the
// tag is tolerated and ignored).
var etcdImage = regexp.MustCompile(`^(?:.*/)?etcd:(v\d+\.\d+\.\d+)(?:@sha256:[0-9a-f]+)?$`)

// etcdTools are the executables an etcd image provides on the bench.
var etcdTools = map[string]bool{"etcd": true, "etcdctl": true, "etcdutl": true}

// ImageResolver builds the kubelet's ResolveImage: etcd images map to the cached etcd of
// that version, extra images (image reference -> directory of executables) to local
// builds, e.g. the operator under test. Anything else is an error, which the kubelet
// reports like a failed image pull.
func ImageResolver(extra map[string]string) func(image, command0 string) (string, error) {
	return func(image, command0 string) (string, error) {
		exe := filepath.Base(command0)
		if dir, ok := extra[image]; ok {
			if command0 == "" {
				return "", fmt.Errorf("image %s: the bench has no entrypoint for it; set command", image)
			}
			p := filepath.Join(dir, exe)
			if strings.HasPrefix(command0, "/") && isExecutable(filepath.Join(dir, command0)) {
				// Absolute paths inside the image, e.g. /usr/local/bin/etcd-operator.
				p = filepath.Join(dir, command0)
			}
			if !isExecutable(p) {
				return "", fmt.Errorf("image %s: %s is not an executable in %s", image, command0, dir)
			}
			return p, nil
		}
		m := etcdImage.FindStringSubmatch(image)
		if m == nil {
			return "", fmt.Errorf("image %s is not available on the bench (known: <registry>/etcd:vX.Y.Z and %d extra images)", image, len(extra))
		}
		if command0 == "" {
			exe = "etcd" // the etcd images' entrypoint
		}
		if !etcdTools[exe] {
			return "", fmt.Errorf("image %s has no executable %q (only etcd, etcdctl, etcdutl)", image, command0)
		}
		p := filepath.Join(EtcdBinDir(m[1]), exe)
		if !isExecutable(p) {
			return "", fmt.Errorf("image %s: etcd %s is not cached at %s (run hack/tools.sh etcd with ETCD_VERSIONS including it)", image, m[1], p)
		}
		return p, nil
	}
}
