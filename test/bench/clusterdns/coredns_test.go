package clusterdns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

// standIn plays the API's records: a zone served by the file plugin where the pod
// runs the kubernetes plugin, which needs an API server.
const standIn = `$ORIGIN cluster.local.
$TTL 1
@ IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 1 1 1 1
m0.c.ns.svc IN A 10.0.0.10
m1.c.ns.svc IN A 10.0.0.11
c.ns.svc IN A 10.0.0.10
c.ns.svc IN A 10.0.0.11
m0.c2.ns.svc IN A 10.0.0.20
m1.c2.ns.svc IN A 10.0.0.21
c2.ns.svc IN A 10.0.0.20
`

type dnsServer struct {
	r     *net.Resolver
	log   *bytes.Buffer
	ready string // URL of the ready plugin
}

// startCoreDNS runs the cached CoreDNS with the bench's Corefile on loopback, the stand-in
// zone in place of the kubernetes plugin, and waits until it is ready.
func startCoreDNS(t *testing.T, withheldDir string) *dnsServer {
	t.Helper()
	zone := filepath.Join(t.TempDir(), "db.cluster.local")
	if err := os.WriteFile(zone, []byte(standIn), 0o644); err != nil {
		t.Fatal(err)
	}
	return runCoreDNS(t, withheldDir, "file "+zone+" cluster.local", "/ready")
}

// runCoreDNS runs the cached CoreDNS with the bench's Corefile on loopback and cluster
// as the plugin of the cluster zones, and waits until probe (/ready or /health) is 200.
func runCoreDNS(t *testing.T, withheldDir, cluster, probe string) *dnsServer {
	t.Helper()
	bin := testenv.Require(t, filepath.Join("coredns-"+images.CoreDNSVersion, "coredns"))
	dir := t.TempDir()
	l := layout{
		bind: "127.0.0.1", dns: testenv.FreePort(t), back: testenv.FreePort(t),
		health:       fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)),
		ready:        fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)),
		withheldDir:  withheldDir,
		clusterZones: "cluster.local in-addr.arpa ip6.arpa",
	}
	conf := filepath.Join(dir, "Corefile")
	text := corefile(l, cluster)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-conf", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		testenv.StopProcess(cmd.Process, done, 5*time.Second)
		if t.Failed() {
			t.Logf("Corefile:\n%s\nCoreDNS output:\n%s", text, out.String())
		}
	})

	// The ready plugin answers 200 once every server is up and the plugins it watches
	// are ready; health once the servers are up.
	probeAddr := l.ready
	if probe == "/health" {
		probeAddr = l.health
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + probeAddr + probe)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("CoreDNS exited:\n%s\nCorefile:\n%s", out.String(), text)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("CoreDNS %s not 200 after 20s: %v\n%s", probe, err, out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	if resp, err := http.Get("http://" + l.health + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health: %v %v", resp, err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", l.dns)
	s := &dnsServer{
		log: &out, ready: "http://" + l.ready + "/ready",
		r: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}},
	}
	// The probes' HTTP servers start before the DNS listeners: wait for an answer.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.r.LookupHost(ctx, "nothing.example.")
		cancel()
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("CoreDNS does not answer: %v\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// lookup resolves an absolute name: its addresses, or nil and whether the server said
// the name has none ("no such host": NXDOMAIN or NODATA), as opposed to a failure.
func (s *dnsServer) lookup(t *testing.T, name string) (addrs []string, notFound bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addrs, err := s.r.LookupHost(ctx, name+".")
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		slices.Sort(addrs)
		return addrs, false
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return nil, true
	}
	t.Fatalf("lookup %s: %v (not an answer)", name, err)
	return nil, false
}

func (s *dnsServer) wantAddrs(t *testing.T, name string, want ...string) {
	t.Helper()
	if got, _ := s.lookup(t, name); !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func (s *dnsServer) wantNone(t *testing.T, name string) {
	t.Helper()
	if got, nf := s.lookup(t, name); !nf {
		t.Errorf("%s = %v, want no such host", name, got)
	}
}

// outsideNames are not in the cluster zones; unknownNames adds one that is.
var (
	outsideNames = []string{"nothing.example", "example", "10.0.0.1.example"}
	unknownNames = append([]string{"nobody.ns.svc.cluster.local"}, outsideNames...)
)

// Unknown names get a negative answer at once: outside the cluster zones there is no
// upstream to wait for.
func checkUnknownNames(t *testing.T, s *dnsServer, names []string) {
	t.Helper()
	for _, name := range names {
		start := time.Now()
		s.wantNone(t, name)
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("%s: negative answer took %v", name, took)
		}
	}
}

// The pod's kubernetes plugin block, as written, starts; with no API server to sync with
// it is not ready, cluster names fail (SERVFAIL, not a false NXDOMAIN), and other names
// still get NXDOMAIN at once.
func TestCorefileKubernetesPluginWithoutAPI(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`, testenv.FreePort(t))
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	plugin := strings.Replace(kubernetesPlugin("cluster.local in-addr.arpa ip6.arpa"), "\n}", "\n    kubeconfig "+kubeconfig+"\n}", 1)
	s := runCoreDNS(t, t.TempDir(), plugin, "/health")
	if resp, err := http.Get(s.ready); err != nil || resp.StatusCode == http.StatusOK {
		t.Errorf("ready without an API server: %v %v", resp, err)
	}
	checkUnknownNames(t, s, outsideNames)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := s.r.LookupHost(ctx, "m1.c.ns.svc.cluster.local.")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || dnsErr.IsNotFound {
		t.Errorf("cluster name before sync: %v, want a server failure", err)
	}
}

func TestCorefileWithoutWithholding(t *testing.T) {
	s := startCoreDNS(t, "")
	s.wantAddrs(t, "m1.c.ns.svc.cluster.local", "10.0.0.11")
	s.wantAddrs(t, "c.ns.svc.cluster.local", "10.0.0.10", "10.0.0.11")
	checkUnknownNames(t, s, unknownNames)
}

// withheldUntil polls name until it resolves again and fails if it resolved at any
// time before until; it returns when it resolved.
func withheldUntil(t *testing.T, s *dnsServer, name string, until time.Time, want ...string) time.Time {
	t.Helper()
	for {
		got, _ := s.lookup(t, name)
		now := time.Now()
		if got != nil {
			if now.Before(until) {
				t.Fatalf("%s resolved to %v %v before its deadline", name, got, until.Sub(now))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s = %v after its deadline, want %v", name, got, want)
			}
			return now
		}
		if now.After(until.Add(5 * time.Second)) {
			t.Fatalf("%s still withheld 5s after its deadline", name)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// takesEffect polls until name no longer resolves and returns how long that took.
func takesEffect(t *testing.T, s *dnsServer, name string, from time.Time) time.Duration {
	t.Helper()
	for {
		if _, nf := s.lookup(t, name); nf {
			return time.Since(from)
		}
		if time.Since(from) > 5*time.Second {
			t.Fatalf("%s still resolves 5s after it was withheld", name)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

func TestWithheldNamesResolveOnlyAfterTheirDeadline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "withheld")
	w, err := NewWithholder(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := startCoreDNS(t, dir)
	s.wantAddrs(t, "m1.c.ns.svc.cluster.local", "10.0.0.11")
	checkUnknownNames(t, s, unknownNames)

	// One name, written as a pod would.
	start := time.Now()
	until := start.Add(3 * time.Second)
	if err := w.Withhold("m1.c.ns", until, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("m1.c.ns withheld after %v", takesEffect(t, s, "m1.c.ns.svc.cluster.local", start))
	s.wantAddrs(t, "m0.c.ns.svc.cluster.local", "10.0.0.10")
	s.wantAddrs(t, "c.ns.svc.cluster.local", "10.0.0.10", "10.0.0.11")
	s.wantNone(t, "x.m1.c.ns.svc.cluster.local")

	// Every name below a suffix but one kept, while the first is still withheld.
	start2 := time.Now()
	until2 := start2.Add(2 * time.Second)
	if err := w.Withhold("*.c2.ns.svc", until2, map[string][]string{"m0.c2.ns.svc": {"10.0.0.20"}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("*.c2.ns withheld after %v", takesEffect(t, s, "m1.c2.ns.svc.cluster.local", start2))
	s.wantAddrs(t, "m0.c2.ns.svc.cluster.local", "10.0.0.20")
	s.wantNone(t, "c2.ns.svc.cluster.local") // the suffix itself, not kept
	checkUnknownNames(t, s, unknownNames)

	back2 := withheldUntil(t, s, "m1.c2.ns.svc.cluster.local", until2, "10.0.0.21")
	t.Logf("*.c2.ns resolved %v after its deadline", back2.Sub(until2))
	s.wantAddrs(t, "c2.ns.svc.cluster.local", "10.0.0.20")
	back := withheldUntil(t, s, "m1.c.ns.svc.cluster.local", until, "10.0.0.11")
	t.Logf("m1.c.ns resolved %v after its deadline", back.Sub(until))

	// Release ends a withholding early.
	if err := w.Withhold("m0.c.ns", time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	takesEffect(t, s, "m0.c.ns.svc.cluster.local", time.Now())
	if err := w.Release("m0.c.ns"); err != nil {
		t.Fatal(err)
	}
	withheldUntil(t, s, "m0.c.ns.svc.cluster.local", time.Now(), "10.0.0.10")
	// A zone's own reload may try its file between the removal and the directory scan
	// that drops the zone; that error is expected, any other is not.
	for _, line := range strings.Split(s.log.String(), "\n") {
		if strings.Contains(line, "[ERROR]") && !strings.Contains(line, "plugin/file: Failed to open zone") {
			t.Errorf("CoreDNS logged an error: %s", line)
		}
	}
}
