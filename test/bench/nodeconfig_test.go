package bench

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"
)

// benchNodes is how many nodes the tests below lay out; the bench runs up to 5.
const benchNodes = 5

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return p
}

// contains reports whether inner lies entirely inside outer.
func contains(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

func TestNodeConfigAddressing(t *testing.T) {
	nodeNet := mustPrefix(t, "10.200.0.0/24")
	cluster := mustPrefix(t, clusterCIDR)
	service := mustPrefix(t, serviceCIDR)
	cp := netip.MustParseAddr(controlPlaneIP)
	if !nodeNet.Contains(cp) {
		t.Fatalf("control plane IP %s outside the node network %s", cp, nodeNet)
	}
	if cluster.Overlaps(service) || cluster.Overlaps(nodeNet) || service.Overlaps(nodeNet) {
		t.Fatalf("cluster %s, service %s and node %s networks overlap", cluster, service, nodeNet)
	}
	if !service.Contains(netip.MustParseAddr(ClusterDNSIP)) || !service.Contains(netip.MustParseAddr(serviceCIDRFirstIP)) {
		t.Errorf("cluster DNS %s or first service IP %s outside %s", ClusterDNSIP, serviceCIDRFirstIP, service)
	}

	seen := map[string]string{} // every name, IP, CIDR and veth of every node, to its owner
	var cidrs []netip.Prefix
	for i := 0; i < benchNodes; i++ {
		n := nodeNetFor(i)
		if n.Name != NodeName(i) {
			t.Errorf("node %d: name %q, want NodeName = %q", i, n.Name, NodeName(i))
		}
		for kind, v := range map[string]string{"name": n.Name, "ip": n.IP, "cidr": n.PodCIDR, "veth": n.Veth} {
			if other, dup := seen[v]; dup {
				t.Errorf("node %d: %s %q already used by %s", i, kind, v, other)
			}
			seen[v] = n.Name + " " + kind
		}
		ip, err := netip.ParseAddr(n.IP)
		if err != nil {
			t.Fatalf("node %d: IP %q: %v", i, n.IP, err)
		}
		if !nodeNet.Contains(ip) || ip == cp || ip == nodeNet.Addr() || ip == netip.MustParseAddr("10.200.0.255") {
			t.Errorf("node %d: IP %s is not a free host address of %s (control plane %s)", i, ip, nodeNet, cp)
		}
		pc := mustPrefix(t, n.PodCIDR)
		if pc != pc.Masked() {
			t.Errorf("node %d: pod CIDR %s has host bits set", i, pc)
		}
		if !contains(cluster, pc) {
			t.Errorf("node %d: pod CIDR %s outside the cluster CIDR %s", i, pc, cluster)
		}
		if pc.Overlaps(service) || pc.Overlaps(nodeNet) {
			t.Errorf("node %d: pod CIDR %s overlaps the service %s or node %s network", i, pc, service, nodeNet)
		}
		if pc.Contains(ip) {
			t.Errorf("node %d: its IP %s is inside its pod CIDR %s", i, ip, pc)
		}
		for j, o := range cidrs {
			if pc.Overlaps(o) {
				t.Errorf("node %d: pod CIDR %s overlaps node %d's %s", i, pc, j, o)
			}
		}
		cidrs = append(cidrs, pc)
		// Interface names are at most IFNAMSIZ-1 = 15 bytes; the veth must not be the name
		// the peer gets inside the node (eth0) nor the bridge's.
		if len(n.Veth) == 0 || len(n.Veth) > 15 || n.Veth == "eth0" || n.Veth == bridgeName {
			t.Errorf("node %d: veth name %q unusable", i, n.Veth)
		}
		if strings.ContainsAny(n.Name, "/ \x00") || n.Name == "" {
			t.Errorf("node %d: name %q cannot name a network namespace", i, n.Name)
		}
	}
}

// pathFields are the string fields of p by field name.
func pathFields(p nodePaths) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(p)
	for i := 0; i < v.NumField(); i++ {
		out[v.Type().Field(i).Name] = v.Field(i).String()
	}
	return out
}

func TestNodeConfigPathsArePrivate(t *testing.T) {
	for _, benchDir := range []string{"/tmp/bench-1", "/tmp/bench-TestX-123/", `/tmp/a b/bench-"q"-é`} {
		t.Run(benchDir, func(t *testing.T) {
			clean := filepath.Clean(benchDir)
			owner := map[string]string{}
			for i := 0; i < benchNodes; i++ {
				n := nodeNetFor(i)
				p := pathsFor(benchDir, n)
				fields := pathFields(p)
				if len(fields) < 12 {
					t.Fatalf("nodePaths has %d fields; the test expects every path field to be a string", len(fields))
				}
				for name, path := range fields {
					if path == "" || !filepath.IsAbs(path) || path != filepath.Clean(path) {
						t.Errorf("%s %s = %q: not a clean absolute path", n.Name, name, path)
					}
					if !strings.HasPrefix(path, clean+"/") {
						t.Errorf("%s %s = %q: not under the bench dir %s", n.Name, name, path, clean)
					}
					if name != "Dir" && !strings.HasPrefix(path, p.Dir+"/") {
						t.Errorf("%s %s = %q: not under the node dir %s", n.Name, name, path, p.Dir)
					}
					if other, dup := owner[path]; dup {
						t.Errorf("%s %s = %q: also %s", n.Name, name, path, other)
					}
					owner[path] = n.Name + " " + name
				}
			}
		})
	}
}

// unixPathMax is sun_path's size; a socket path must be shorter (Go's net.Listen returns
// EINVAL at 108 bytes and more: it needs the NUL).
const unixPathMax = 108

// longestBenchDir is the longest directory NewForTest makes: os.MkdirTemp("",
// "bench-"+<40 runes of the test name>+"-") appends up to 10 random digits.
func longestBenchDir() string {
	return filepath.Join(os.TempDir(), "bench-"+ShortName(strings.Repeat("x", 100))+"-"+"4294967295")
}

func TestNodeConfigContainerdSocketFits(t *testing.T) {
	dir := longestBenchDir()
	for i := 0; i < benchNodes; i++ {
		p := pathsFor(dir, nodeNetFor(i))
		// containerd listens on the socket and, with ttrpc.address empty, on
		// <socket>.ttrpc beside it.
		for _, s := range []string{p.ContainerdSock, p.ContainerdSock + ".ttrpc"} {
			if len(s) >= unixPathMax {
				t.Errorf("node %d: socket %s is %d bytes, want < %d", i, s, len(s), unixPathMax)
			}
		}
	}
}

// The kubelet (v1.37) listens on <root-dir>/pod-resources/kubelet.sock and exits if it
// cannot (pkg/kubelet/server.ListenAndServePodResources: os.Exit(1)).
func TestNodeConfigKubeletSocketFits(t *testing.T) {
	dir := longestBenchDir()
	for i := 0; i < benchNodes; i++ {
		p := pathsFor(dir, nodeNetFor(i))
		s := filepath.Join(p.KubeletRoot, "pod-resources", "kubelet.sock")
		if len(s) >= unixPathMax {
			t.Errorf("node %d: kubelet pod-resources socket %s is %d bytes, want < %d", i, s, len(s), unixPathMax)
		}
	}
}

// lookup walks nested maps by keys.
func lookup(t *testing.T, m map[string]any, keys ...string) any {
	t.Helper()
	var cur any = m
	for i, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s is %T, not a table", strings.Join(keys[:i], "."), cur)
		}
		if cur, ok = mm[k]; !ok {
			t.Fatalf("no %s", strings.Join(keys[:i+1], "."))
		}
	}
	return cur
}

func TestNodeConfigContainerd(t *testing.T) {
	for _, benchDir := range []string{"/tmp/bench-1", `/tmp/a b/bench-"q"-\-é`} {
		t.Run(benchDir, func(t *testing.T) {
			n := nodeNetFor(2)
			p := pathsFor(benchDir, n)
			const registry, sandbox = "10.200.0.1:5000", "bench.local/pause:3.10"
			var c map[string]any
			if _, err := toml.Decode(containerdConfig(p, registry, sandbox), &c); err != nil {
				t.Fatalf("containerd config is not TOML: %v\n%s", err, containerdConfig(p, registry, sandbox))
			}
			cri := []string{"plugins", "io.containerd.grpc.v1.cri"}
			at := func(keys ...string) any { return lookup(t, c, keys...) }
			for _, tc := range []struct {
				keys []string
				want any
			}{
				{[]string{"version"}, int64(2)},
				{[]string{"root"}, p.ContainerdRoot},
				{[]string{"state"}, p.ContainerdState},
				{[]string{"grpc", "address"}, p.ContainerdSock},
				{append(cri, "sandbox_image"), sandbox},
				{append(cri, "restrict_oom_score_adj"), true},
				{append(cri, "disable_apparmor"), true},
				{append(cri, "containerd", "snapshotter"), "overlayfs"},
				{append(cri, "containerd", "runtimes", "runc", "options", "SystemdCgroup"), false},
				{append(cri, "containerd", "runtimes", "runc", "options", "BinaryName"), "/usr/sbin/runc"},
				{append(cri, "cni", "conf_dir"), p.CNIConfDir},
				{append(cri, "registry", "mirrors", "*", "endpoint"), []any{"http://" + registry}},
				{[]string{"plugins", "io.containerd.internal.v1.opt", "path"}, filepath.Join(p.Dir, "containerd", "opt")},
			} {
				if got := at(tc.keys...); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s = %#v, want %#v", strings.Join(tc.keys, "."), got, tc.want)
				}
			}
		})
	}
}

func TestNodeConfigCNI(t *testing.T) {
	for i := 0; i < benchNodes; i++ {
		n := nodeNetFor(i)
		p := pathsFor("/tmp/bench-7", n)
		var c struct {
			CNIVersion string `json:"cniVersion"`
			Name       string
			Plugins    []struct {
				Type        string
				IsGateway   bool `json:"isGateway"`
				IPMasq      bool `json:"ipMasq"`
				HairpinMode bool `json:"hairpinMode"`
				IPAM        struct {
					Type    string
					Ranges  [][]struct{ Subnet string }
					DataDir string `json:"dataDir"`
				}
				Capabilities map[string]bool
			}
		}
		if err := json.Unmarshal([]byte(cniConfig(n, p)), &c); err != nil {
			t.Fatalf("node %d: CNI config is not JSON: %v", i, err)
		}
		if len(c.Plugins) != 2 || c.Plugins[0].Type != "bridge" || c.Plugins[1].Type != "portmap" {
			t.Fatalf("node %d: plugins %+v, want bridge then portmap", i, c.Plugins)
		}
		br := c.Plugins[0]
		if !br.IsGateway || br.IPMasq || !br.HairpinMode {
			t.Errorf("node %d: bridge isGateway=%v ipMasq=%v hairpinMode=%v, want true false true", i, br.IsGateway, br.IPMasq, br.HairpinMode)
		}
		if br.IPAM.Type != "host-local" || len(br.IPAM.Ranges) != 1 || len(br.IPAM.Ranges[0]) != 1 || br.IPAM.Ranges[0][0].Subnet != n.PodCIDR {
			t.Errorf("node %d: ipam %+v, want host-local over %s only", i, br.IPAM, n.PodCIDR)
		}
		if br.IPAM.DataDir != p.CNIDataDir || !strings.HasPrefix(br.IPAM.DataDir, p.Dir+"/") {
			t.Errorf("node %d: ipam dataDir %q, want the node's private %q", i, br.IPAM.DataDir, p.CNIDataDir)
		}
		if !c.Plugins[1].Capabilities["portMappings"] {
			t.Errorf("node %d: portmap lacks the portMappings capability", i)
		}
		if c.CNIVersion == "" || c.Name == "" {
			t.Errorf("node %d: cniVersion %q name %q", i, c.CNIVersion, c.Name)
		}
	}
}

// yamlMap parses YAML into a map the way the components' loaders see it (numbers as
// float64, through JSON).
func yamlMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, s)
	}
	return m
}

func TestNodeConfigKubelet(t *testing.T) {
	for _, benchDir := range []string{"/tmp/bench-1", `/tmp/a b/bench-"q"-#x`} {
		t.Run(benchDir, func(t *testing.T) {
			n := nodeNetFor(1)
			p := pathsFor(benchDir, n)
			const root = "/process_api/abc/bench-42-1/bench-node-2"
			m := yamlMap(t, kubeletConfig(n, p, root))
			for _, tc := range []struct {
				keys []string
				want any
			}{
				{[]string{"apiVersion"}, "kubelet.config.k8s.io/v1beta1"},
				{[]string{"kind"}, "KubeletConfiguration"},
				{[]string{"failCgroupV1"}, false},
				{[]string{"cgroupDriver"}, "cgroupfs"},
				{[]string{"cgroupRoot"}, root},
				{[]string{"cgroupsPerQOS"}, true},
				{[]string{"clusterDNS"}, []any{"10.96.0.10"}},
				{[]string{"clusterDomain"}, "cluster.local"},
				{[]string{"containerRuntimeEndpoint"}, "unix://" + p.ContainerdSock},
				{[]string{"address"}, n.IP},
				{[]string{"resolvConf"}, p.ResolvConf},
				{[]string{"podLogsDir"}, p.PodLogs},
				{[]string{"healthzBindAddress"}, "127.0.0.1"},
				{[]string{"readOnlyPort"}, float64(0)},
				{[]string{"failSwapOn"}, false},
				{[]string{"protectKernelDefaults"}, false},
				{[]string{"authorization", "mode"}, "AlwaysAllow"},
				{[]string{"evictionHard", "nodefs.available"}, "1%"},
				{[]string{"evictionHard", "imagefs.available"}, "1%"},
				{[]string{"evictionHard", "memory.available"}, "50Mi"},
			} {
				if got := lookup(t, m, tc.keys...); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s = %#v, want %#v", strings.Join(tc.keys, "."), got, tc.want)
				}
			}
			// REAL-NODE.md: singleProcessOOMKill must stay unset on cgroup v1.
			if _, ok := m["singleProcessOOMKill"]; ok {
				t.Error("singleProcessOOMKill is set")
			}
		})
	}
}

func TestNodeConfigKubeProxy(t *testing.T) {
	n := nodeNetFor(3)
	const kubeconfig = `/tmp/a b/bench-"q"/kube-proxy.kubeconfig`
	m := yamlMap(t, kubeProxyConfig(n.Name, n.IP, kubeconfig, clusterCIDR))
	for _, tc := range []struct {
		keys []string
		want any
	}{
		{[]string{"apiVersion"}, "kubeproxy.config.k8s.io/v1alpha1"},
		{[]string{"kind"}, "KubeProxyConfiguration"},
		{[]string{"mode"}, "iptables"},
		{[]string{"clientConnection", "kubeconfig"}, kubeconfig},
		{[]string{"hostnameOverride"}, n.Name},
		{[]string{"bindAddress"}, n.IP},
		{[]string{"clusterCIDR"}, clusterCIDR},
		{[]string{"detectLocalMode"}, "ClusterCIDR"},
		{[]string{"conntrack", "maxPerCore"}, float64(0)},
		{[]string{"conntrack", "min"}, float64(0)},
		{[]string{"conntrack", "tcpEstablishedTimeout"}, "0s"},
		{[]string{"conntrack", "tcpCloseWaitTimeout"}, "0s"},
		{[]string{"conntrack", "udpTimeout"}, "0s"},
		{[]string{"conntrack", "udpStreamTimeout"}, "0s"},
		{[]string{"iptables", "localhostNodePorts"}, false},
		{[]string{"iptables", "masqueradeAll"}, false},
	} {
		if got := lookup(t, m, tc.keys...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s = %#v, want %#v", strings.Join(tc.keys, "."), got, tc.want)
		}
	}
	for _, k := range []string{"healthzBindAddress", "metricsBindAddress"} {
		if v, _ := m[k].(string); !strings.HasPrefix(v, "127.0.0.1:") {
			t.Errorf("%s = %q, want loopback of the node's namespace", k, v)
		}
	}
}

func TestNodeConfigResolvConf(t *testing.T) {
	got := nodeResolvConf()
	var servers []string
	for _, l := range strings.Split(got, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
			servers = append(servers, f[1])
		}
	}
	if !reflect.DeepEqual(servers, []string{ClusterDNSIP}) || !strings.HasSuffix(got, "\n") {
		t.Errorf("resolv.conf %q: nameservers %v, want only %s, newline-terminated", got, servers, ClusterDNSIP)
	}
}
