// Package etcdtest starts real etcd processes for tests.
//
// The binaries come from the tool cache filled by hack/tools.sh
// (<cache>/etcd-<version>/etcd). Every member gets its own loopback address
// 127.A.B.C and binds the ports a member uses in Kubernetes (:2379 client,
// :2380 peer), so peer and client URLs look like the real thing and many
// clusters can run side by side. A is derived from the test process ID so that
// packages tested in parallel (one process each) rarely pick the same range, and
// every address is probed with a bind before use, which catches the rest.
//
// Every process is started by this package and stopped by PID in t.Cleanup,
// also when the test fails; the members' logs are printed then to help
// diagnose the failure.
package etcdtest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

const (
	// DefaultVersion is the etcd release the operator targets.
	DefaultVersion = "v3.7.3"
	// OldVersion is the previous minor release, for mixed-version tests.
	OldVersion = "v3.6.16"

	clientPort = 2379
	peerPort   = 2380

	// startTimeout bounds how long a member may take to report healthy. The
	// measured time is ~1-3 s; the margin covers a machine busy compiling.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a graceful stop before SIGKILL.
	stopTimeout = 10 * time.Second
)

// CacheDir returns the tool cache root: $ETCD_OPERATOR_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator (the same rule as hack/tools.sh).
func CacheDir() string { return testenv.CacheDir() }

// Binary returns the path of a cached etcd tool ("etcd", "etcdctl", "etcdutl")
// of the given version ("v3.7.3" or "3.7.3"). When it is missing the test is
// skipped, unless the environment variable CI is set: then it fails, so a CI
// run can never pass by skipping everything.
func Binary(t testing.TB, version, tool string) string {
	t.Helper()
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	dir := filepath.Join(CacheDir(), "etcd-"+version)
	p := filepath.Join(dir, tool)
	_, errDone := os.Stat(filepath.Join(dir, ".done"))
	if _, err := os.Stat(p); err != nil || errDone != nil {
		testenv.Missing(t, "etcd binary %s not in the cache (run `bash hack/tools.sh etcd`; ETCD_OPERATOR_CACHE overrides the cache root)", p)
	}
	return p
}

// Member is one etcd process (running or not).
type Member struct {
	Name      string
	Version   string
	IP        string
	ClientURL string // http://IP:2379 (https with TLS)
	PeerURL   string // http://IP:2380 (https with TLS)
	DataDir   string
	LogPath   string

	bin      string
	certFile string // with TLS: serves clients and peers, and is its peer client cert
	keyFile  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has exited
}

// PID is the process ID of the running process, or 0.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Cluster is a set of members started by this package. Members is in start
// order and keeps stopped and killed members (their data dirs stay).
type Cluster struct {
	t       testing.TB
	Token   string
	Version string
	ca      *testCA // nil without TLS
	hc      *http.Client

	mu      sync.Mutex
	Members []*Member
}

var (
	// addrCounter numbers the addresses handed out by this process.
	addrCounter atomic.Uint32
	// addrBase is the second octet of every address of this process.
	addrBase = 200 + os.Getpid()%50
)

// allocIP returns a loopback address whose etcd ports are free right now.
func allocIP(t testing.TB) string {
	t.Helper()
	for range 1000 {
		n := addrCounter.Add(1)
		ip := fmt.Sprintf("127.%d.%d.%d", addrBase, (n/250)%250, n%250+1)
		if portsFree(ip) {
			return ip
		}
	}
	t.Fatal("etcdtest: no free loopback address found")
	return ""
}

func portsFree(ip string) bool {
	for _, p := range []int{clientPort, peerPort} {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(p)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// Options for StartClusterWithOptions.
type Options struct {
	Version string // default DefaultVersion
	// TLS serves clients and peers over TLS with client-certificate
	// authentication (certificates from a throw-away CA); use ClientTLS.
	TLS bool
}

// StartCluster starts n voting members of the given version as a new cluster
// and waits until every member reports healthy.
func StartCluster(t testing.TB, n int, version string) *Cluster {
	t.Helper()
	return StartClusterWithOptions(t, n, Options{Version: version})
}

var clusterCounter atomic.Int32

// StartClusterWithOptions is StartCluster with options.
func StartClusterWithOptions(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	version := opts.Version
	if version == "" {
		version = DefaultVersion
	}
	c := &Cluster{
		t:       t,
		Version: version,
		Token:   fmt.Sprintf("etcdtest-%d-%d", os.Getpid(), clusterCounter.Add(1)),
		hc:      &http.Client{Timeout: 2 * time.Second},
	}
	if opts.TLS {
		c.ca = newTestCA(t)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = c.ca.clientTLS(t, "etcdtest-probe")
		c.hc.Transport = tr
		t.Cleanup(tr.CloseIdleConnections)
	}
	var ms []*Member
	var ic []string
	for i := range n {
		m := c.NewMember(fmt.Sprintf("m%d", i), version)
		ms = append(ms, m)
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range ms {
		c.start(m, strings.Join(ic, ","), "new")
	}
	for _, m := range ms {
		c.WaitHealthy(m, startTimeout)
	}
	return c
}

// ClientTLS returns a client TLS configuration with a client certificate the
// members accept, or nil for a cluster without TLS.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.ca == nil {
		return nil
	}
	return c.ca.clientTLS(c.t, fmt.Sprintf("client-%d", c.ca.Serial()+1))
}

// ClientTLSAs is ClientTLS with a client certificate whose common name is cn: with
// etcd auth on, members started with --client-cert-auth take it as the user name of a
// request that carries no other credentials. Nil for a cluster without TLS.
func (c *Cluster) ClientTLSAs(cn string) *tls.Config {
	if c.ca == nil {
		return nil
	}
	return c.ca.clientTLS(c.t, cn)
}

// NewMember allocates an address and a data dir for a member without starting
// it: a joining member's peer URL must be added to the cluster before it starts.
func (c *Cluster) NewMember(name, version string) *Member {
	c.t.Helper()
	if version == "" {
		version = c.Version
	}
	ip := allocIP(c.t)
	dir := c.t.TempDir()
	scheme := "http"
	if c.ca != nil {
		scheme = "https"
	}
	m := &Member{
		Name:      name,
		Version:   version,
		IP:        ip,
		ClientURL: fmt.Sprintf("%s://%s:%d", scheme, ip, clientPort),
		PeerURL:   fmt.Sprintf("%s://%s:%d", scheme, ip, peerPort),
		DataDir:   filepath.Join(dir, "data"),
		LogPath:   filepath.Join(dir, name+".log"),
		bin:       Binary(c.t, version, "etcd"),
	}
	if c.ca != nil {
		// Outgoing peer connections leave from 127.0.0.1 (the source address
		// is not bound to the member's IP), and with --peer-client-cert-auth
		// etcd checks the peer certificate's IP SANs against the remote
		// address: the certificate must name 127.0.0.1 too.
		m.certFile, m.keyFile = c.ca.issue(c.t, fmt.Sprintf("%s-%s", name, ip), ip, "127.0.0.1")
	}
	c.mu.Lock()
	c.Members = append(c.Members, m)
	c.mu.Unlock()
	return m
}

// StartJoining starts m as a new member of the existing cluster
// (--initial-cluster-state existing) and waits until it reports healthy.
// initialCluster must list every member of the cluster as name=peerURL,
// including m itself, exactly as MemberList shows them after the MemberAdd.
func (c *Cluster) StartJoining(m *Member, initialCluster string) {
	c.t.Helper()
	c.start(m, initialCluster, "existing")
	c.WaitHealthy(m, startTimeout)
}

// StartFromDataDir starts a member whose data dir already holds its state
// (a restored snapshot or a previous run) and waits until it is healthy.
func (c *Cluster) StartFromDataDir(m *Member, initialCluster string) {
	c.t.Helper()
	c.start(m, initialCluster, "new")
	c.WaitHealthy(m, startTimeout)
}

// Restart starts a stopped or killed member again on its data dir.
func (c *Cluster) Restart(m *Member) {
	c.t.Helper()
	// etcd ignores the --initial-* flags when the data dir has a WAL.
	c.start(m, m.Name+"="+m.PeerURL, "existing")
	c.WaitHealthy(m, startTimeout)
}

// Endpoints returns the client URLs of the running members.
func (c *Cluster) Endpoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var eps []string
	for _, m := range c.Members {
		if m.Running() {
			eps = append(eps, m.ClientURL)
		}
	}
	return eps
}

// Member returns the member whose client URL or peer URL or name is s.
func (c *Cluster) Member(s string) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.Members {
		if m.ClientURL == s || m.PeerURL == s || m.Name == s {
			return m
		}
	}
	return nil
}

func (c *Cluster) start(m *Member, initialCluster, state string) {
	c.t.Helper()
	if m.Running() {
		c.t.Fatalf("etcdtest: member %s already running", m.Name)
	}
	logf, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	args := []string{
		"--name", m.Name,
		"--data-dir", m.DataDir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", state,
		"--initial-cluster-token", c.Token,
		// Test data is thrown away; fsync would only make tests slow and
		// timing-sensitive on a busy disk.
		"--unsafe-no-fsync",
	}
	if c.ca != nil {
		args = append(args,
			"--cert-file", m.certFile, "--key-file", m.keyFile,
			"--trusted-ca-file", c.ca.caFile, "--client-cert-auth",
			"--peer-cert-file", m.certFile, "--peer-key-file", m.keyFile,
			"--peer-trusted-ca-file", c.ca.caFile, "--peer-client-cert-auth",
		)
	}
	cmd := exec.Command(m.bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Own process group: a ^C to `go test` must not race our orderly stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("etcdtest: start %s: %v", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()

	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("etcdtest: last log lines of %s (%s, pid %d):\n%s", m.Name, m.Version, cmd.Process.Pid, tail(m.LogPath, 30))
		}
		testenv.StopProcess(cmd.Process, done, stopTimeout)
	})
}

// process is the member's current process and the channel closed when it exits; the
// test fails if the member was never started.
func (m *Member) process(t testing.TB) (*exec.Cmd, chan struct{}) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		t.Fatalf("etcdtest: member %s was never started", m.Name)
	}
	return m.cmd, m.done
}

// Kill sends SIGKILL to the member's process and waits until it is gone.
func (m *Member) Kill(t testing.TB) {
	t.Helper()
	cmd, done := m.process(t)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		t.Fatalf("etcdtest: member %s (pid %d) did not die after SIGKILL", m.Name, cmd.Process.Pid)
	}
}

// Stop sends SIGTERM (a leader hands off leadership on it) and waits for the
// exit, escalating to SIGKILL after a timeout.
func (m *Member) Stop(t testing.TB) {
	t.Helper()
	cmd, done := m.process(t)
	testenv.StopProcess(cmd.Process, done, stopTimeout)
}

// WaitHealthy polls the member's /health endpoint until it answers healthy,
// failing the test after timeout or as soon as the process exits.
func (c *Cluster) WaitHealthy(m *Member, timeout time.Duration) {
	c.t.Helper()
	if err := waitHealthy(c.hc, m, timeout); err != nil {
		c.t.Fatalf("etcdtest: %v\n%s", err, tail(m.LogPath, 30))
	}
}

// Healthy reports whether the member answers /health with true right now.
func (c *Cluster) Healthy(m *Member) error { return probeHealth(c.hc, m.ClientURL) }

func waitHealthy(hc *http.Client, m *Member, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if !m.Running() {
			return fmt.Errorf("member %s exited while waiting for it to become healthy", m.Name)
		}
		last = probeHealth(hc, m.ClientURL)
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("member %s not healthy after %v: %v", m.Name, timeout, last)
}

func probeHealth(hc *http.Client, clientURL string) error {
	resp, err := hc.Get(clientURL + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		body.WriteString(sc.Text())
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(body.String(), `"health":"true"`) {
		return errors.New("unhealthy: " + body.String())
	}
	return nil
}

// TimedOut says whether err is a timeout: a probe that timed out tells a refusal from
// nothing, since a hung or dead member fails it too.
func TimedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// tail returns the last n lines of a file, for failure reports.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// InitialCluster formats name=peerURL pairs as etcd's --initial-cluster value.
func InitialCluster(pairs ...[2]string) string {
	s := make([]string, 0, len(pairs))
	for _, p := range pairs {
		s = append(s, p[0]+"="+p[1])
	}
	return strings.Join(s, ",")
}
