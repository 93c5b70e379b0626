package runtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// Every pod runs in a network namespace of its own, as under a real kubelet, so that
// members listening on the unspecified address (0.0.0.0:2379, ...) do not collide and
// loopback is the pod's own. The pods' eth0 ends of veth pairs hang on one bridge in the
// test's network namespace, which bench.RunTestMain made private, so no packet leaves
// it. The bridge carries an IPv4 and an IPv6 subnet: a pod gets the addresses of the
// families its case asks for.
//
// A pod's namespace is configured before etcd starts, as a CNI plugin does before the
// kubelet starts containers: the test binary re-executes itself in a new network
// namespace (envPodChild), waits until the parent has moved eth0 in and written the
// configuration, sets the addresses, and only then executes etcd in its place.

// envPodChild marks the re-executed test binary that sets up a pod's network namespace.
const envPodChild = "ETCD_OPERATOR_RUNTEST_POD_CHILD"

// podNetwork is the bridge of one test cluster.
type podNetwork struct {
	bridge string
	subnet byte
	v4, v6 bool
}

// family says which address families a cluster's pods get; the first is the pod's
// primary IP (status.podIP), the one the kubelet probes.
type family int

const (
	ipv4Only family = iota
	ipv6Only
	dualStack // IPv6 primary
)

func (f family) String() string { return [...]string{"IPv4", "IPv6", "dual-stack"}[f] }

// podChildConfig is what the parent hands the child on fd 3.
type podChildConfig struct {
	Addrs []string // prefixes for eth0, e.g. 10.244.1.1/24
	Bin   string
	Args  []string
	Env   []string
}

// requireTools skips (or fails under CI) when a tool the pod networks need is missing.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s not found: the pods' network namespaces need it (iproute2, util-linux)", tool)
		}
	}
}

// ipCmd runs `ip args...` in the test's network namespace.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newPodNetwork creates the bridge of a cluster with the test's own addresses on it
// (.254 and ::fe), so the test reaches pods the way a node reaches its pods.
func newPodNetwork(t *testing.T, subnet byte, f family) *podNetwork {
	t.Helper()
	requireTools(t, "ip", "nsenter")
	n := &podNetwork{bridge: fmt.Sprintf("rt%dbr", subnet), subnet: subnet, v4: f != ipv6Only, v6: f != ipv4Only}
	steps := [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", n.gateway4().String() + "/24", "dev", n.bridge},
		// nodad: the address is usable at once instead of after duplicate detection.
		{"addr", "add", n.gateway6().String() + "/64", "dev", n.bridge, "nodad"},
		{"link", "set", n.bridge, "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = ipCmd("link", "del", n.bridge) })
	return n
}

func (n *podNetwork) gateway4() netip.Addr { return netip.AddrFrom4([4]byte{10, 244, n.subnet, 254}) }
func (n *podNetwork) gateway6() netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0, 0, 0x10, 0x02, 0x44, 0, n.subnet, 15: 0xfe})
}

// podAddrs are pod i's addresses, primary first.
func (n *podNetwork) podAddrs(i int) []netip.Addr {
	v4 := netip.AddrFrom4([4]byte{10, 244, n.subnet, byte(i + 1)})
	v6 := netip.AddrFrom16([16]byte{0xfd, 0, 0, 0x10, 0x02, 0x44, 0, n.subnet, 15: byte(i + 1)})
	switch {
	case n.v4 && n.v6:
		return []netip.Addr{v6, v4}
	case n.v6:
		return []netip.Addr{v6}
	default:
		return []netip.Addr{v4}
	}
}

// startInPod starts bin in a new network namespace on the bridge with addrs, and
// returns the started command: once the child has set up the namespace it is bin itself
// (same process), so signals and Wait reach etcd.
func (n *podNetwork) startInPod(t *testing.T, i int, addrs []netip.Addr, bin string, args, env []string, out io.Writer) *exec.Cmd {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args[0] = os.Args[0]
	cmd.Env = []string{envPodChild + "=1", "PATH=" + os.Getenv("PATH")}
	cmd.ExtraFiles = []*os.File{r}
	cmd.Stdout, cmd.Stderr = out, out
	// If the test binary dies, its pods die with it; the signal survives the exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatalf("start pod child: %v", err)
	}
	fail := func(err error) {
		w.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal(err)
	}
	host := fmt.Sprintf("rt%dp%d", n.subnet, i)
	// A pod restarted on its data gets the same link name; the kernel removes the link
	// of the previous pod's namespace only some time after its process is gone.
	_ = ipCmd("link", "del", host)
	if err := ipCmd("link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", fmt.Sprint(cmd.Process.Pid)); err != nil {
		fail(err)
	}
	if err := ipCmd("link", "set", host, "master", n.bridge, "up"); err != nil {
		fail(err)
	}
	cfg := podChildConfig{Bin: bin, Args: args, Env: env}
	for _, a := range addrs {
		bits := 24
		if a.Is6() {
			bits = 64
		}
		cfg.Addrs = append(cfg.Addrs, netip.PrefixFrom(a, bits).String())
	}
	if err := json.NewEncoder(w).Encode(cfg); err != nil {
		fail(err)
	}
	w.Close()
	return cmd
}

// runPodChild is the re-executed test binary inside a pod's new network namespace:
// it reads its configuration, brings up lo and eth0 with the pod's addresses, and
// executes the pod's program. It never returns.
func runPodChild() {
	f := os.NewFile(3, "config")
	var cfg podChildConfig
	if err := json.NewDecoder(f).Decode(&cfg); err != nil {
		podChildFail(fmt.Errorf("read configuration: %w", err))
	}
	f.Close()
	steps := [][]string{{"link", "set", "lo", "up"}}
	for _, a := range cfg.Addrs {
		s := []string{"addr", "add", a, "dev", "eth0"}
		if strings.Contains(a, ":") {
			s = append(s, "nodad")
		}
		steps = append(steps, s)
	}
	steps = append(steps, []string{"link", "set", "eth0", "up"})
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			podChildFail(err)
		}
	}
	podChildFail(syscall.Exec(cfg.Bin, append([]string{cfg.Bin}, cfg.Args...), cfg.Env))
}

func podChildFail(err error) {
	fmt.Fprintf(os.Stderr, "runtest pod: %v\n", err)
	os.Exit(126)
}

// inPod runs a command in a pod's network namespace, like `kubectl exec`.
func inPod(pid int, bin string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{fmt.Sprintf("--net=/proc/%d/ns/net", pid), "--", bin}, args...)...)
}
