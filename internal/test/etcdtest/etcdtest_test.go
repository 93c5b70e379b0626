package etcdtest

import (
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// The cluster forms on distinct loopback addresses; a killed member stops
// answering and comes back on restart; every process is gone after the test.
func TestClusterLifecycleAndCleanup(t *testing.T) {
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		c := StartCluster(t, 3, DefaultVersion)
		if got := len(c.Endpoints()); got != 3 {
			t.Fatalf("endpoints = %d, want 3", got)
		}
		ips := map[string]bool{}
		for _, m := range c.Members {
			if ips[m.IP] {
				t.Fatalf("address %s used twice", m.IP)
			}
			ips[m.IP] = true
			if !strings.HasPrefix(m.IP, "127.") || !strings.HasSuffix(m.ClientURL, ":2379") || !strings.HasSuffix(m.PeerURL, ":2380") {
				t.Fatalf("unexpected URLs %s %s", m.ClientURL, m.PeerURL)
			}
			pids = append(pids, m.PID())
		}

		victim := c.Members[1]
		victim.Kill(t)
		if victim.Running() || alive(pids[1]) {
			t.Fatal("killed member still running")
		}
		if got := len(c.Endpoints()); got != 2 {
			t.Fatalf("endpoints after kill = %d, want 2", got)
		}
		if err := c.Healthy(victim); err == nil {
			t.Fatal("killed member still answers /health")
		}

		c.Restart(victim)
		// Restart returned on a healthy answer; asked again here, one /health (bounded by
		// 2 s, a linearizable read) can miss on a loaded machine while the rejoined member
		// catches up, so it is asked until it answers.
		poll.Eventually(t, 30*time.Second, 100*time.Millisecond, "the restarted member healthy", func() error { return c.Healthy(victim) })
		pids = append(pids, victim.PID())

		// A member that cannot start makes StartJoining fail fast, not hang:
		// checked through waitHealthy so the test itself does not fail.
		bad := c.NewMember("bad", "")
		c.start(bad, "bad="+bad.PeerURL+",x=not-a-url", "existing")
		err := waitHealthy(c.hc, bad, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), "exited") {
			t.Fatalf("waitHealthy on a broken member = %v, want an 'exited' error", err)
		}
	})
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still alive after the test's cleanup", pid)
		}
	}
}

func TestBinaryMissingSkipsOrFails(t *testing.T) {
	t.Setenv("ETCD_OPERATOR_CACHE", t.TempDir())
	t.Setenv("CI", "")
	ft := &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		Binary(ft, "v0.0.0", "etcd")
	}()
	if !ft.skipped || ft.failed {
		t.Fatalf("missing binary without CI: skipped=%v failed=%v, want a skip", ft.skipped, ft.failed)
	}
	t.Setenv("CI", "true")
	ft = &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		Binary(ft, "v0.0.0", "etcd")
	}()
	if !ft.failed {
		t.Fatal("missing binary under CI must fail the test")
	}
}

// fakeTB records Skip/Fatal instead of ending the real test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

var errStop = errors.New("stop")

func (f *fakeTB) Helper()                          {}
func (f *fakeTB) Skipf(format string, args ...any) { f.skipped = true; panic(errStop) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	panic(errStop)
}

// With TLS, members only talk to clients presenting a certificate of the CA.
func TestTLSCluster(t *testing.T) {
	c := StartClusterWithOptions(t, 1, Options{TLS: true})
	m := c.Members[0]
	if !strings.HasPrefix(m.ClientURL, "https://") || !strings.HasPrefix(m.PeerURL, "https://") {
		t.Fatalf("URLs %s %s", m.ClientURL, m.PeerURL)
	}
	if err := c.Healthy(m); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	// Each refusal must be the TLS handshake's: a timeout or a dead member would fail
	// the probe too, and prove nothing about who is served.
	err := probeHealth(&http.Client{Timeout: 5 * time.Second}, m.ClientURL)
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &unknownCA) {
		t.Fatalf("a client without the CA: want the member's certificate refused as of an unknown authority, got %v", err)
	}
	noCert := c.ClientTLS()
	noCert.Certificates = nil
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: noCert}}
	// The member's alert (TLS 1.3: after the client's handshake, at its first read), or
	// a reset when the member closes with the request unread; never a timeout.
	err = probeHealth(hc, m.ClientURL)
	if err == nil || TimedOut(err) {
		t.Fatalf("a client without a certificate: want it refused by the member, got %v", err)
	}
	t.Logf("without a certificate: %v", err)
}
