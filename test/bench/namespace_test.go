package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const envNSHelper = "BENCH_NAMESPACE_TEST_HELPER"

// TestNamespaceHelper is the program TestEnterNamespace runs: it enters the namespace,
// reports what it sees and exits with a code the parent must pass on.
func TestNamespaceHelper(t *testing.T) {
	if os.Getenv(envNSHelper) == "" {
		t.Skip("helper for TestEnterNamespace")
	}
	if err := EnterNamespace(); err != nil {
		fmt.Println("enter:", err)
		os.Exit(3)
	}
	hosts, _ := os.ReadFile("/etc/hosts")
	resolv, _ := os.ReadFile("/etc/resolv.conf")
	fmt.Printf("inside=%v hosts=%q resolv=%q\n", InNamespace(), hosts, resolv)
	os.Exit(7)
}

func TestEnterNamespace(t *testing.T) {
	if InNamespace() {
		t.Skip("already inside a bench namespace")
	}
	before, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamespaceHelper$")
	cmd.Env = append(os.Environ(), envNSHelper+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		t.Fatalf("helper exit = %v, want code 7 passed through; output:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"inside=true", "cluster DNS is CoreDNS", "nameserver " + ClusterDNSIP, "search default.svc.cluster.local svc.cluster.local cluster.local"} {
		if !strings.Contains(got, want) {
			t.Errorf("child output lacks %q:\n%s", want, got)
		}
	}
	after, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the host's /etc/hosts changed")
	}
}
