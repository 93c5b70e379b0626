// Package kubelet is the bench's emulated kubelet: it registers Nodes with a real
// kube-apiserver, keeps their Leases and Ready conditions fresh, and runs the Pods the
// real scheduler binds to them as local processes (no containers), so an operator under
// test sees the same API objects and state transitions a real kubelet produces.
//
// This file is the contract between the kubelet and the rest of the bench
// (test/bench composes it with the control plane). Keep it stable.
package kubelet

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// NodeSpec describes one emulated Node.
type NodeSpec struct {
	Name   string            // also the kubernetes.io/hostname label
	Labels map[string]string // extra labels, e.g. topology.kubernetes.io/zone
	// IP is the node's InternalIP and its pods' hostIP; default 127.0.0.1. Pods with
	// hostNetwork get this IP as their podIP.
	IP string
	// CPU and Memory are the node's capacity (= allocatable); defaults "4" and "8Gi".
	CPU, Memory string
	// MaxPods is the pods capacity; default 110.
	MaxPods int
}

// Config is what the bench hands the kubelet.
type Config struct {
	RestConfig *rest.Config
	Nodes      []NodeSpec
	// RootDir holds per-pod directories (volumes, logs) and the local PV provisioner's data.
	RootDir string
	// ResolveImage maps a container image reference and the container's command[0]
	// (may be empty: the image's entrypoint) to a local executable.
	ResolveImage func(image, command0 string) (string, error)
	// HostsFile is the bench's cluster DNS: a hosts file bind-mounted over /etc/hosts in
	// the bench namespace. The kubelet edits it in place (same inode), never replaces it.
	HostsFile string
	// ClusterDomain for DNS records, default "cluster.local".
	ClusterDomain string
	// APIServerHost/APIServerPort are injected as KUBERNETES_SERVICE_HOST/PORT into pods,
	// because Service ClusterIPs are not routable on the bench.
	APIServerHost string
	APIServerPort int
	// PodCIDRPrefix: pods get IPs 127.<x>.<y>.<z> from this prefix, e.g. "127.1." .
	PodIPPrefix string
	// HeartbeatInterval for Node Leases and status (default 2s).
	HeartbeatInterval time.Duration

	// ExtraEnv ("K=V") is appended to every container's environment before the
	// container's own env, e.g. GOCOVERDIR for coverage of the operator under test.
	ExtraEnv []string
	// Logger for the kubelet; default klog.Background().
	Logger logr.Logger
	// RestartBackoffInitial/Max bound the CrashLoopBackOff delay (defaults 1s and 10s;
	// a real kubelet uses 10s and 5m, which is too slow for a bench).
	RestartBackoffInitial, RestartBackoffMax time.Duration
	// StorageClassName is the default StorageClass the built-in provisioner creates and
	// serves (WaitForFirstConsumer, local PVs pinned to the node); default "bench-local".
	StorageClassName string
}
