package bench

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Addresses of the bench network. They exist only inside the network namespaces the bench
// creates (its own and one per node); nothing routes them off the machine.
const (
	bridgeName     = "bench0"
	controlPlaneIP = "10.200.0.1" // the bench namespace's address on bridgeName
	nodeNetPrefix  = 24

	serviceCIDR        = "10.96.0.0/16"
	serviceCIDRFirstIP = "10.96.0.1"
	// ClusterDNSIP is the ClusterIP of kube-system/kube-dns (CoreDNS).
	ClusterDNSIP = "10.96.0.10"
	clusterCIDR  = "10.244.0.0/16"

	// The IPv6 side of the bench network, used by an IPv6-primary bench (Options.IPv6):
	// unique local addresses, inside the bench's namespaces only.
	controlPlaneIP6     = "fd00:200::1"
	nodeNetPrefix6      = 64
	serviceCIDR6        = "fd00:96::/112"
	serviceCIDR6FirstIP = "fd00:96::1"
	clusterCIDR6        = "fd00:244::/56"

	clusterDomain = "cluster.local"
	// registryPort is where the bench's image registry listens on controlPlaneIP.
	registryPort = 5000
)

// nodeNet is one node's place in the bench network.
type nodeNet struct {
	Name    string // node name, also its network namespace's name
	IP      string // on eth0 inside the node's namespace
	PodCIDR string // served by the node's CNI bridge
	Veth    string // the host end of eth0, a port of bridgeName in the bench namespace
	// IP6 and PodCIDR6 are set on a dual-stack (IPv6-primary) bench only.
	IP6, PodCIDR6 string
}

// withIPv6 gives the i-th node its IPv6 address and pod CIDR.
func (n nodeNet) withIPv6(i int) nodeNet {
	n.IP6 = fmt.Sprintf("fd00:200::%x", 0x11+i)
	n.PodCIDR6 = fmt.Sprintf("fd00:244:0:%x::/64", i+1)
	return n
}

// nodeIPs is the kubelet's --node-ip: the IPv6 address first on an IPv6-primary bench,
// which makes IPv6 every pod's primary IP (status.podIP).
func (n nodeNet) nodeIPs() string {
	if n.IP6 != "" {
		return n.IP6 + "," + n.IP
	}
	return n.IP
}

// nodeNetFor is the i-th (0-based) node's addressing: 10.200.0.11+i, pods 10.244.(i+1).0/24.
func nodeNetFor(i int) nodeNet {
	return nodeNet{
		Name:    NodeName(i),
		IP:      fmt.Sprintf("10.200.0.%d", 11+i),
		PodCIDR: fmt.Sprintf("10.244.%d.0/24", i+1),
		Veth:    fmt.Sprintf("bn%d", i+1),
	}
}

// nodePaths are one node's private directories and files under the bench directory.
type nodePaths struct {
	Dir, ContainerdRoot, ContainerdState, ContainerdSock, ContainerdConfig string
	CNIConfDir, CNIDataDir                                                 string
	KubeletRoot, KubeletConfig, PodLogs, ResolvConf                        string
	KubeProxyConfig                                                        string
}

func pathsFor(benchDir string, n nodeNet) nodePaths {
	// Unix socket paths are limited to 108 bytes (107 usable), and the kubelet puts one
	// 26 bytes below its root (pod-resources/kubelet.sock) and exits if it cannot: keep
	// every directory name on the way short.
	d := filepath.Join(benchDir, "n", strings.TrimPrefix(n.Name, "bench-node-"))
	return nodePaths{
		Dir:              d,
		ContainerdRoot:   filepath.Join(d, "containerd", "root"),
		ContainerdState:  filepath.Join(d, "containerd", "state"),
		ContainerdSock:   filepath.Join(d, "containerd.sock"),
		ContainerdConfig: filepath.Join(d, "containerd.toml"),
		CNIConfDir:       filepath.Join(d, "cni", "net.d"),
		CNIDataDir:       filepath.Join(d, "cni", "ipam"),
		KubeletRoot:      filepath.Join(d, "k"),
		KubeletConfig:    filepath.Join(d, "kubelet.yaml"),
		PodLogs:          filepath.Join(d, "pods"),
		ResolvConf:       filepath.Join(d, "resolv.conf"),
		KubeProxyConfig:  filepath.Join(d, "kube-proxy.yaml"),
	}
}

// containerdConfig is containerd 1.6's configuration for one node. Every path is private
// to the node; restrict_oom_score_adj is needed where nobody may lower oom_score_adj (see
// REAL-NODE.md); the "*" mirror sends every pull, whatever registry an image names, to the
// bench registry, so pods keep their real image names and containerd really pulls.
func containerdConfig(p nodePaths, registry, sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[6]q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."*"]
    endpoint = ["http://%[7]s"]
`, p.ContainerdRoot, p.ContainerdState, p.ContainerdSock, filepath.Join(p.Dir, "containerd", "opt"),
		sandboxImage, p.CNIConfDir, registry)
}

// cniConfig is the node's pod network: a bridge with host-local addresses from its pod
// CIDR (state in a private dir), hairpin so a pod reaches itself through a Service, and
// portmap for hostPort. No masquerade: every bench namespace routes every pod CIDR.
func cniConfig(n nodeNet, p nodePaths) string {
	ranges := [][]map[string]string{{{"subnet": n.PodCIDR}}}
	routes := []map[string]string{{"dst": "0.0.0.0/0"}}
	if n.PodCIDR6 != "" {
		ranges = append(ranges, []map[string]string{{"subnet": n.PodCIDR6}})
		routes = append(routes, map[string]string{"dst": "::/0"})
	}
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "bench",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cni0",
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  ranges,
					"routes":  routes,
					"dataDir": p.CNIDataDir,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return string(b) + "\n"
}

// kubeletConfig is the node's KubeletConfiguration. failCgroupV1 false: this kind of
// machine has cgroup v1 hierarchies. Leases are short and statuses frequent so that the
// control plane's shortened node-failure detection (nodeMonitorGracePeriod) works.
// Thresholds are low because every node shares one disk with everything else.
func kubeletConfig(n nodeNet, p nodePaths, cgroupRoot string) string {
	// On a dual-stack node the API server reaches the kubelet (exec, logs) at the node's
	// first InternalIP, the IPv6 one: listen on both ("::" is dual-stack in Go).
	address := n.IP
	if n.IP6 != "" {
		address = "::"
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]q
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: unix://%[2]s
address: %[3]q
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
clusterDNS: [%[4]q]
clusterDomain: %[5]s
resolvConf: %[6]q
podLogsDir: %[7]q
failSwapOn: false
protectKernelDefaults: false
nodeLeaseDurationSeconds: 10
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 10s
syncFrequency: 5s
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
evictionPressureTransitionPeriod: 5s
shutdownGracePeriod: 0s
rotateCertificates: false
kubeAPIQPS: 50
kubeAPIBurst: 100
`, cgroupRoot, p.ContainerdSock, address, ClusterDNSIP, clusterDomain, p.ResolvConf, p.PodLogs)
}

// kubeProxyConfig runs kube-proxy in iptables mode without touching a global sysctl:
// conntrack sizes and timeouts 0 mean "leave as is" (they are machine-wide), and
// localhostNodePorts would set route_localnet.
func kubeProxyConfig(hostname, ip, kubeconfig, clusterCIDRs string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]q
  qps: 50
  burst: 100
hostnameOverride: %[2]s
bindAddress: %[3]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: %[4]s
detectLocalMode: ClusterCIDR
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
iptables:
  localhostNodePorts: false
  masqueradeAll: false
  syncPeriod: 10s
  minSyncPeriod: 0s
`, kubeconfig, hostname, ip, clusterCIDRs)
}

// nodeResolvConf is what pods with dnsPolicy Default (CoreDNS itself) get: cluster DNS
// has no upstream on the bench, so there is nothing else to point at.
func nodeResolvConf() string {
	return "nameserver " + ClusterDNSIP + "\noptions ndots:1 timeout:1 attempts:2\n"
}

// ControlPlaneIP is the test process's address on the bench network: a server a test
// starts there (MinIO, say) is reachable from pods.
const ControlPlaneIP = controlPlaneIP
