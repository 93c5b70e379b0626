package kubelet

import (
	"strings"
	"testing"
)

func TestIPAllocatorSequenceAndRoundRobin(t *testing.T) {
	a, err := newIPAllocator("127.1.")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 3; i++ {
		ip, err := a.allocate("p")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip)
	}
	if strings.Join(got, ",") != "127.1.0.2,127.1.0.3,127.1.0.4" {
		t.Fatalf("got %v", got)
	}
	a.release("127.1.0.2")
	ip, _ := a.allocate("q")
	if ip != "127.1.0.5" {
		t.Fatalf("a released IP must not be reused before the range wraps, got %s", ip)
	}
}

func TestIPAllocatorSkipsNetworkAndBroadcastLikeOctets(t *testing.T) {
	a, err := newIPAllocator("127.2")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 600; i++ {
		ip, err := a.allocate("p")
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(ip, ".0") || strings.HasSuffix(ip, ".255") {
			t.Fatalf("allocated %s", ip)
		}
		if seen[ip] {
			t.Fatalf("duplicate %s", ip)
		}
		seen[ip] = true
	}
	if !seen["127.2.1.1"] || !seen["127.2.2.2"] {
		t.Fatalf("expected allocation to continue into the next /24s")
	}
}

func TestIPAllocatorExhaustionAndReuse(t *testing.T) {
	a, err := newIPAllocator("127.3.4.")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := a.allocate("p"); err != nil {
			break
		}
		n++
	}
	if n != 253 { // .2 .. .254
		t.Fatalf("allocated %d addresses from a /24, want 253", n)
	}
	a.release("127.3.4.77")
	ip, err := a.allocate("q")
	if err != nil || ip != "127.3.4.77" {
		t.Fatalf("after release got %q, %v", ip, err)
	}
}

func TestIPAllocatorRejectsBadPrefix(t *testing.T) {
	for _, p := range []string{"10.0.", "127.1.2.3.", "127.300.", "abc"} {
		if _, err := newIPAllocator(p); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
}
