package runtest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
	"github.com/etcd-operator/etcd-operator/test/bench"
)

// runningPod is a rendered member pod run as a local process in a network namespace of
// its own.
type runningPod struct {
	pod   *corev1.Pod
	ip    string   // status.podIP: the primary address, which the kubelet probes
	addrs []string // every address of the pod, primary first
	log   string
	cmd   *exec.Cmd
	done  chan struct{}
}

// TestRenderedPodsFormACluster renders a three-member cluster, runs every pod's etcd
// container as a process exactly as rendered (command, args, env with the downward
// API, $(VAR) expansion), with only what a kubelet would provide substituted: the
// image becomes the cached etcd binary of the image's version, mount paths become
// temporary directories holding the volume contents, and each pod gets a network
// namespace of its own with its addresses published in the private /etc/hosts under
// the member's DNS name.
// Then it checks that the cluster serves through the advertised client URLs, that
// the rendered probes pass on every pod address, that etcdctl inside a pod reaches its
// member over loopback (as `kubectl exec <member> -- etcdctl endpoint health` does), and
// that on quorum loss readiness fails while liveness keeps passing. The pods are
// IPv4-only, IPv6-only or dual-stack.
func TestRenderedPodsFormACluster(t *testing.T) {
	for i, tc := range []struct {
		name     string
		versions []string // per member; spec.version is the last
		tls      bool
		family   family
	}{
		{"3.6.16", []string{"3.6.16", "3.6.16", "3.6.16"}, false, ipv4Only},
		{"3.7.3", []string{"3.7.3", "3.7.3", "3.7.3"}, false, ipv4Only},
		{"upgrade in progress", []string{"3.6.16", "3.7.3", "3.7.3"}, false, ipv4Only},
		{"TLS", []string{"3.7.3", "3.7.3", "3.7.3"}, true, ipv4Only},
		{"IPv6-only", []string{"3.6.16", "3.6.16", "3.6.16"}, false, ipv6Only},
		{"dual-stack TLS", []string{"3.7.3", "3.7.3", "3.7.3"}, true, dualStack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCluster(t, byte(i+1), tc.versions, tc.tls, tc.family)
		})
	}
}

func runCluster(t *testing.T, subnet byte, versions []string, withTLS bool, fam family) {
	bins := map[string]string{}
	for _, v := range versions {
		bins["v"+v] = etcdtest.Binary(t, v, "etcd")
	}
	etcdctl := etcdtest.Binary(t, versions[len(versions)-1], "etcdctl")
	pn := newPodNetwork(t, subnet, fam)
	ns := "default"
	c := &v1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("run%d", subnet), Namespace: ns, UID: "uid-1"},
		Spec:       v1beta2.EtcdClusterSpec{Size: len(versions), Version: versions[len(versions)-1]},
	}
	if withTLS {
		c.Spec.TLS = &v1beta2.TLSPolicy{Static: &v1beta2.StaticTLS{
			Member:         &v1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"},
			OperatorSecret: "client",
		}}
	}
	var names []string
	for i := range versions {
		names = append(names, fmt.Sprintf("%s-%d", c.Name, i))
	}
	ic := render.InitialCluster(c, names, "")
	var members []render.Member
	for i, n := range names {
		members = append(members, render.Member{Name: n, Version: versions[i], InitialClusterState: render.StateNew, InitialCluster: ic})
	}
	r, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := r.Render(render.Input{Cluster: c, Members: members})
	if err != nil {
		t.Fatal(err)
	}

	// "Cluster DNS": one hosts line per member address, appended in place as the bench
	// does; it also answers the reverse lookups etcd makes of peers' source addresses.
	index := map[string]int{}
	var hosts strings.Builder
	for i, n := range names {
		index[n] = i
		for _, a := range pn.podAddrs(i) {
			fmt.Fprintf(&hosts, "%s\t%s\n", a, render.MemberHost(c, n, ""))
		}
	}
	appendHosts(t, hosts.String())

	var certs *testCerts
	if withTLS {
		certs = newTestCerts(t, c)
	}
	var pods []*runningPod
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, startPod(t, pn, index[p.Name], p, bins, certs))
		}
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	if certs != nil {
		hc.Transport = &http.Transport{TLSClientConfig: certs.clientConfig}
	}

	// Every member becomes ready by its own rendered readiness probe, at its pod IP. Every
	// probe passes at every address of the pod, and etcdctl reaches the member over the
	// pod's loopback.
	for _, p := range pods {
		waitProbe(t, p, p.pod.Spec.Containers[0].ReadinessProbe, true, 90*time.Second)
	}
	for _, p := range pods {
		ctr := p.pod.Spec.Containers[0]
		for _, addr := range p.addrs {
			for _, pr := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe, ctr.StartupProbe} {
				if ok, msg := probeAt(addr, pr); !ok {
					t.Errorf("%s: probe %s fails at %s on a healthy member: %s", p.pod.Name, pr.HTTPGet.Path, addr, msg)
				}
			}
		}
		loopbackHealth(t, p, etcdctl, certs)
	}
	// A write through one member's advertised client URL is read through another's.
	put(t, hc, render.ClientURL(c, names[0], ""), "k", "v1")
	if got := get(t, hc, render.ClientURL(c, names[2], ""), "k"); got != "v1" {
		t.Fatalf("read %q through %s, want v1", got, names[2])
	}
	if withTLS {
		// Client certificate auth is on: a client without a certificate is refused.
		plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.clientConfig.RootCAs}}}
		if _, err := plain.Get(render.ClientURL(c, names[0], "") + "/version"); err == nil {
			t.Errorf("a client without a certificate was served")
		}
	}

	// Quorum loss: stop two of three. The survivor turns unready, but stays live.
	stopPod(t, pods[1])
	stopPod(t, pods[2])
	survivor := pods[0]
	waitProbe(t, survivor, survivor.pod.Spec.Containers[0].ReadinessProbe, false, 60*time.Second)
	live := survivor.pod.Spec.Containers[0].LivenessProbe
	for i := 0; i < 3; i++ {
		if ok, msg := probe(survivor, live); !ok {
			t.Fatalf("liveness fails on quorum loss (a restart would not help): %s", msg)
		}
		time.Sleep(time.Second) // spacing the checks, not synchronising
	}
}

// loopbackHealth runs `etcdctl endpoint health` in the pod's network namespace, as
// `kubectl exec <member> -- etcdctl endpoint health` would: without TLS at etcdctl's
// default endpoint 127.0.0.1:2379, with TLS at localhost (the name the test's server
// certificate carries) with the operator's client certificate.
func loopbackHealth(t *testing.T, p *runningPod, etcdctl string, certs *testCerts) {
	t.Helper()
	args := []string{"endpoint", "health", "--command-timeout=5s"}
	if certs != nil {
		args = append(args, "--endpoints=https://localhost:2379",
			"--cacert="+certs.files["ca.crt"], "--cert="+certs.files["client.crt"], "--key="+certs.files["client.key"])
	}
	cmd := inPod(p.cmd.Process.Pid, etcdctl, args...)
	cmd.Env = []string{"ETCDCTL_API=3"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is healthy") {
		t.Errorf("%s: etcdctl %s in the pod: %v\n%s", p.pod.Name, strings.Join(args, " "), err, out)
	}
}

// startPod runs the pod's etcd container as a process in a network namespace of its
// own with pod i's addresses.
func startPod(t *testing.T, pn *podNetwork, i int, p *corev1.Pod, bins map[string]string, certs *testCerts) *runningPod {
	t.Helper()
	return startPodOn(t, pn, i, p, bins, certs, "")
}

// startPodOn is startPod with the data volume at data, when not "": a pod recreated on
// its claim finds the data its member left there.
func startPodOn(t *testing.T, pn *podNetwork, i int, p *corev1.Pod, bins map[string]string, certs *testCerts, data string) *runningPod {
	t.Helper()
	if len(p.Spec.Containers) != 1 || len(p.Spec.InitContainers) != 0 {
		t.Fatalf("%s: want one container and no init containers", p.Name)
	}
	ctr := p.Spec.Containers[0]
	_, tag, _ := strings.Cut(ctr.Image, ":")
	bin := bins[tag]
	if bin == "" {
		t.Fatalf("%s: no binary for image %s", p.Name, ctr.Image)
	}
	if len(ctr.Command) != 1 || ctr.Command[0] != "/usr/local/bin/etcd" {
		t.Fatalf("%s: command %v", p.Name, ctr.Command)
	}

	// Volumes: a directory per mount, filled like the kubelet would.
	dir := t.TempDir()
	volumes := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("%s: mount of unknown volume %s", p.Name, m.Name)
		}
		host := filepath.Join(dir, m.Name)
		if m.Name == render.DataVolumeName && data != "" {
			host = data
		}
		if err := os.MkdirAll(host, 0o700); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.EmptyDir != nil, v.PersistentVolumeClaim != nil && data != "":
		case v.Secret != nil && certs != nil:
			for k, data := range certs.secrets[v.Secret.SecretName] {
				if err := os.WriteFile(filepath.Join(host, k), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		default:
			t.Fatalf("%s: volume %+v not supported here", p.Name, v)
		}
		mounts[m.MountPath] = host
	}

	addrs := pn.podAddrs(i)
	ip := addrs[0].String()

	// Environment, downward API first, then $(VAR) expansion of the arguments.
	env := map[string]string{}
	var envList []string
	for _, e := range ctr.Env {
		val := e.Value
		if e.ValueFrom != nil {
			switch {
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
				val = ip
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				val = p.Name
			default:
				t.Fatalf("%s: env %s source not supported here", p.Name, e.Name)
			}
		} else {
			val = expand(val, env)
		}
		env[e.Name] = val
		envList = append(envList, e.Name+"="+val)
	}
	var args []string
	for _, a := range ctr.Args {
		args = append(args, remapPaths(expand(a, env), mounts))
	}

	rp := &runningPod{pod: p, ip: ip, log: filepath.Join(dir, "etcd.log"), done: make(chan struct{})}
	for _, a := range addrs {
		rp.addrs = append(rp.addrs, a.String())
	}
	logf, err := os.Create(rp.log)
	if err != nil {
		t.Fatal(err)
	}
	rp.cmd = pn.startInPod(t, i, addrs, bin, args, envList, logf)
	go func() {
		_ = rp.cmd.Wait()
		logf.Close()
		close(rp.done)
	}()
	t.Cleanup(func() {
		stopPod(t, rp)
		if t.Failed() {
			b, _ := os.ReadFile(rp.log)
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s (pid %d) log tail:\n%s", p.Name, rp.cmd.Process.Pid, b)
		}
	})
	return rp
}

// stopPod stops the process like a pod deletion: SIGTERM, then SIGKILL after a grace.
func stopPod(t *testing.T, p *runningPod) {
	testenv.StopProcess(p.cmd.Process, p.done, 10*time.Second)
}

// expand applies Kubernetes' $(VAR) expansion: known variables are replaced, unknown
// references stay as written, and $$ is a literal $.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) {
			if s[i+1] == '$' {
				b.WriteByte('$')
				i++
				continue
			}
			if s[i+1] == '(' {
				if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
					name := s[i+2 : i+2+end]
					if v, ok := env[name]; ok {
						b.WriteString(v)
						i += 2 + end
						continue
					}
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// remapPaths rewrites "--flag=<mount path>/..." to the directory standing in for it.
func remapPaths(arg string, mounts map[string]string) string {
	flag, val, ok := strings.Cut(arg, "=")
	if !ok {
		return arg
	}
	for mp, host := range mounts {
		if val == mp || strings.HasPrefix(val, mp+"/") {
			return flag + "=" + host + strings.TrimPrefix(val, mp)
		}
	}
	return arg
}

// probe performs an HTTP probe as the kubelet does: GET http://<pod IP>:<port><path>,
// success on 2xx/3xx within timeoutSeconds.
func probe(p *runningPod, pr *corev1.Probe) (bool, string) { return probeAt(p.ip, pr) }

// probeAt is probe at one of the pod's addresses.
func probeAt(ip string, pr *corev1.Probe) (bool, string) {
	g := pr.HTTPGet
	if g == nil || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) || g.Host != "" {
		return false, fmt.Sprintf("not a plain HTTP probe of the pod IP: %+v", pr)
	}
	url := fmt.Sprintf("http://%s%s", net.JoinHostPort(ip, g.Port.String()), g.Path)
	hc := &http.Client{Timeout: time.Duration(pr.TimeoutSeconds) * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return false, fmt.Sprintf("%s: %d %s", url, resp.StatusCode, bytes.TrimSpace(body))
	}
	return true, ""
}

func waitProbe(t *testing.T, p *runningPod, pr *corev1.Probe, want bool, budget time.Duration) {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		ok, msg := probe(p, pr)
		if ok == want {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited while waiting for probe %s", p.pod.Name, pr.HTTPGet.Path)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: probe %s did not become %v within %v (last: %s)", p.pod.Name, pr.HTTPGet.Path, want, budget, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// put and get use etcd's JSON gateway on the client URL, so the test needs no client
// library and goes through the advertised URL (DNS name, scheme) exactly.
// put writes k=v through the member at clientURL. A connection the member drops (a
// member just restarted can reset one while it settles under load) is tried again for
// a while: writing the same value twice changes nothing the test reads.
func put(t *testing.T, hc *http.Client, clientURL, k, v string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"key": b64(k), "value": b64(v)})
	url := clientURL + "/v3/kv/put"
	poll.Eventually(t, 30*time.Second, 500*time.Millisecond, "POST "+url, func() error {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
		}
		return nil
	})
}

func get(t *testing.T, hc *http.Client, clientURL, k string) string {
	t.Helper()
	var out struct {
		Kvs []struct{ Value string } `json:"kvs"`
	}
	gateway(t, hc, clientURL+"/v3/kv/range", map[string]string{"key": b64(k)}, &out)
	if len(out.Kvs) != 1 {
		t.Fatalf("range %q: %d keys", k, len(out.Kvs))
	}
	v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func gateway(t *testing.T, hc *http.Client, url string, req, out interface{}) {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %v in %s", url, err, b)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func appendHosts(t *testing.T, lines string) {
	t.Helper()
	// Appended in place: resolvers notice appends, not a replaced file.
	f, err := os.OpenFile(bench.HostsFile(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
}

// testCerts are the CoreOS-style Secrets of a cluster (peer, server) and a client
// configuration for the test, all signed by one throwaway CA; files holds the CA and
// the client certificate as files for etcdctl.
type testCerts struct {
	secrets      map[string]map[string][]byte // Secret name -> key -> data
	clientConfig *tls.Config
	files        map[string]string
}

func newTestCerts(t *testing.T, c *v1beta2.EtcdCluster) *testCerts {
	t.Helper()
	ca := testpki.NewCA(t, "test-ca")
	caPEM := ca.PEM
	wildcard := fmt.Sprintf("*.%s.%s.svc", c.Name, c.Namespace)
	// With --peer-client-cert-auth etcd also checks a connecting peer's certificate
	// against the connection's source address (reverse DNS of the source IP must match
	// a SAN). The source is the peer's pod IP, whose hosts line names the member under
	// the headless Service, as its PTR record does in Kubernetes: the wildcard suffices.
	peerCrt, peerKey := ca.Issue(t, "peer", []string{wildcard}, nil)
	serverCrt, serverKey := ca.Issue(t, "server", []string{wildcard, "localhost"}, nil)
	clientCrt, clientKey := ca.Issue(t, "client", nil, nil)
	pair, err := tls.X509KeyPair(clientCrt, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	dir := t.TempDir()
	files := map[string]string{}
	for name, data := range map[string][]byte{"ca.crt": caPEM, "client.crt": clientCrt, "client.key": clientKey} {
		files[name] = filepath.Join(dir, name)
		if err := os.WriteFile(files[name], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &testCerts{
		files: files,
		secrets: map[string]map[string][]byte{
			"peer":   {"peer.crt": peerCrt, "peer.key": peerKey, "peer-ca.crt": caPEM},
			"server": {"server.crt": serverCrt, "server.key": serverKey, "server-ca.crt": caPEM},
		},
		clientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
	}
}
