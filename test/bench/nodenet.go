package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// The bench network: a bridge in the bench's own network namespace (where the control
// plane, the registry and the test process live, at controlPlaneIP), and one network
// namespace per node joined to it by a veth pair. Every namespace routes every node's pod
// CIDR to that node, so pods, nodes and the control plane reach each other without NAT.
// All of it lives in namespaces the bench created; the host's network is never touched.

// ip runs ip(8) with args and returns its error with its output.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetns runs ip(8) inside a node's network namespace.
func inNetns(ns string, args ...string) error {
	return ip(append([]string{"-n", ns}, args...)...)
}

// netnsPath is where `ip netns add` pins a namespace (in the bench's private /run).
func netnsPath(ns string) string { return filepath.Join("/run/netns", ns) }

var (
	sysctlKey   = regexp.MustCompile(`^net(\.[a-z0-9_-]+)+$`)
	sysctlValue = regexp.MustCompile(`^[0-9]+$`)
)

// setSysctlIn writes a per-network-namespace sysctl (net.*) as seen from namespace ns
// ("" is the bench's own). Only net.* entries are namespaced; nothing else is written.
func setSysctlIn(ns, key, value string) error {
	if !strings.HasPrefix(key, "net.") || !sysctlKey.MatchString(key) || !sysctlValue.MatchString(value) {
		return fmt.Errorf("refusing to set %s=%q: only per-namespace net.* sysctls to plain values", key, value)
	}
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	if ns == "" {
		return os.WriteFile(path, []byte(value), 0o644)
	}
	// `ip netns exec` gives the command the namespace's view of /proc/sys/net.
	out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "echo "+value+" > "+path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("set %s=%s in %s: %v: %s", key, value, ns, err, out)
	}
	return nil
}

// setupBridge gives the bench namespace its bridge and address, and lets it forward
// between nodes (bridge-nf-call-iptables so kube-proxy's rules see bridged traffic).
func setupBridge() error {
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", controlPlaneIP, nodeNetPrefix), "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	sysctls := [][2]string{
		{"net.ipv4.ip_forward", "1"},
		{"net.bridge.bridge-nf-call-iptables", "1"},
	}
	if ipv6Available() {
		// nodad: usable at once, not after duplicate address detection.
		if err := ip("-6", "addr", "add", fmt.Sprintf("%s/%d", controlPlaneIP6, nodeNetPrefix6), "dev", bridgeName, "nodad"); err != nil {
			return err
		}
		sysctls = append(sysctls, [2]string{"net.ipv6.conf.all.forwarding", "1"}, [2]string{"net.bridge.bridge-nf-call-ip6tables", "1"})
	}
	for _, kv := range sysctls {
		if err := setSysctlIn("", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// addNodeNetwork creates node n's namespace with eth0 on the bridge, and routes to every
// node's pod CIDR (all of nodes, n included) in n's namespace and the bench's.
func addNodeNetwork(n nodeNet, all []nodeNet) error {
	steps := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.Veth, "type", "veth", "peer", "name", "eth0", "netns", n.Name},
		{"link", "set", n.Veth, "master", bridgeName, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	for _, s := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", fmt.Sprintf("%s/%d", n.IP, nodeNetPrefix), "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", "default", "via", controlPlaneIP},
	} {
		if err := inNetns(n.Name, s...); err != nil {
			return err
		}
	}
	if n.IP6 != "" {
		for _, s := range [][]string{
			{"-6", "addr", "add", fmt.Sprintf("%s/%d", n.IP6, nodeNetPrefix6), "dev", "eth0", "nodad"},
			{"-6", "route", "add", "default", "via", controlPlaneIP6},
		} {
			if err := inNetns(n.Name, s...); err != nil {
				return err
			}
		}
	}
	for _, o := range all {
		if o.Name == n.Name {
			continue
		}
		if err := inNetns(n.Name, "route", "add", o.PodCIDR, "via", o.IP); err != nil {
			return err
		}
		if o.PodCIDR6 != "" && n.IP6 != "" {
			if err := inNetns(n.Name, "-6", "route", "add", o.PodCIDR6, "via", o.IP6); err != nil {
				return err
			}
		}
	}
	if err := ip("route", "add", n.PodCIDR, "via", n.IP); err != nil {
		return err
	}
	if n.PodCIDR6 != "" {
		if err := ip("-6", "route", "add", n.PodCIDR6, "via", n.IP6); err != nil {
			return err
		}
	}
	sysctls := [][2]string{
		{"net.ipv4.ip_forward", "1"},
		{"net.bridge.bridge-nf-call-iptables", "1"},
	}
	if n.IP6 != "" {
		sysctls = append(sysctls, [2]string{"net.ipv6.conf.all.forwarding", "1"}, [2]string{"net.bridge.bridge-nf-call-ip6tables", "1"})
	}
	for _, kv := range sysctls {
		if err := setSysctlIn(n.Name, kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// setNodeLink cuts (up=false) or restores a node's only link to everyone else.
func setNodeLink(n nodeNet, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ip("link", "set", n.Veth, state)
}

// removeNodeNetwork deletes the node's veth pair, route and namespace. The veth is deleted
// explicitly: `ip netns del` only unmounts the namespace, which (and the veth peer in it)
// lives on while a slow-dying process of the node still holds it, and the next bench of
// this process would then find the veth's name taken.
func removeNodeNetwork(n nodeNet) error {
	_ = ip("link", "del", n.Veth)
	_ = ip("route", "del", n.PodCIDR)
	if n.PodCIDR6 != "" {
		_ = ip("-6", "route", "del", n.PodCIDR6)
	}
	if _, err := os.Stat(netnsPath(n.Name)); err != nil {
		return nil
	}
	return ip("netns", "del", n.Name)
}

// ipv6Available reports whether this kernel has IPv6 (an IPv6 bench needs it; an IPv4
// one must not).
func ipv6Available() bool {
	_, err := os.Stat("/proc/sys/net/ipv6")
	return err == nil
}
