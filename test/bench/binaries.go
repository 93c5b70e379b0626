package bench

import (
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
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

// MissingBinaries lists what the bench runs and does not find: the control plane, the
// node agents and CoreDNS from the cache (hack/tools.sh), and containerd, runc, the CNI
// plugins and iptables from Debian packages (.ci/run installs them).
func MissingBinaries() []string {
	var missing []string
	for _, p := range []string{
		filepath.Join(EtcdBinDir(EtcdVersion), "etcd"),
		filepath.Join(K8sBinDir(), "kube-apiserver"),
		filepath.Join(K8sBinDir(), "kube-controller-manager"),
		filepath.Join(K8sBinDir(), "kube-scheduler"),
		filepath.Join(nodeBinDir(), "kubelet"),
		filepath.Join(nodeBinDir(), "kube-proxy"),
		filepath.Join(CacheDir(), "coredns-"+images.CoreDNSVersion, "coredns"),
		"/usr/bin/containerd",
		"/usr/bin/containerd-shim-runc-v2",
		"/usr/sbin/runc",
		"/usr/lib/cni/bridge",
		"/usr/lib/cni/host-local",
		"/usr/lib/cni/portmap",
		"/usr/sbin/iptables",
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
