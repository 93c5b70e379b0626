package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// setSysctlIn must refuse anything but net.* before it touches /proc. The value passed is
// the one the entry already holds, so even a regression that wrote it would change nothing.
func TestSysctlRefusesGlobalKeys(t *testing.T) {
	for _, key := range []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "vm.panic_on_oom", "kernel.keys.root_maxkeys"} {
		path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		value := strings.TrimSpace(string(before))
		err = setSysctlIn("", key, value)
		if err == nil || !strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), key) {
			t.Errorf("setSysctlIn(%q, %q) = %v, want a refusal naming the key", key, value, err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("%s changed from %q to %q", key, before, after)
		}
	}
	// Prefixes that only look like net.* are not namespaced either; these entries do not
	// exist, so nothing could be written even if the check were wrong.
	for _, key := range []string{"", "net", "netx.y", "network.z"} {
		if err := setSysctlIn("", key, "1"); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("setSysctlIn(%q) = %v, want a refusal", key, err)
		}
	}
}

func TestNodeNetIPHelpers(t *testing.T) {
	if got, want := netnsPath(NodeName(0)), "/run/netns/bench-node-1"; got != want {
		t.Errorf("netnsPath = %q, want %q", got, want)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Missing(t, "no ip(8) (iproute2)")
	}
	// Both calls only fail: an unknown object, a namespace that does not exist.
	err := ip("no-such-object-xyz")
	if err == nil || !strings.Contains(err.Error(), "ip no-such-object-xyz") || !strings.Contains(err.Error(), "no-such-object-xyz\"") {
		t.Errorf("ip(unknown object) = %v, want an error naming the command and carrying ip's message", err)
	}
	err = inNetns("bench-no-such-ns-xyz", "link", "show")
	if err == nil || !strings.Contains(err.Error(), "ip -n bench-no-such-ns-xyz link show") {
		t.Errorf("inNetns(missing namespace) = %v, want an error naming the command", err)
	}
}
