package render

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestCheckDialURL(t *testing.T) {
	for _, ok := range []string{
		"http://10.1.2.3:2379",
		"https://[fd00::5]:2379",
		"http://[::1]:2379/",
		"https://example-0000.example.default.svc.cluster.local:2379",
	} {
		if err := checkDialURL(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, tc := range []struct{ url, mention string }{
		// A pod IP joined without brackets: url.Parse takes it, etcd's clients do not.
		{"http://fd00::5:2379", "brackets"},
		{"http://fd00::5", "brackets"},
		{"http://10.1.2.3", "port"},
		{"http://[fd00::5]", "port"},
		{"http://:2379", "host"},
		{"unix:///var/run/etcd.sock", "scheme"},
		{"ftp://10.1.2.3:2379", "scheme"},
		{"http://user:pw@10.1.2.3:2379", "nothing more"},
		{"http://10.1.2.3:2379/v3", "nothing more"},
		{"http://10.1.2.3:2379?x=1", "nothing more"},
		{"", "scheme"},
		{"http://10.1.2.3:2379\n", "invalid control character"},
	} {
		err := checkDialURL(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("checkDialURL(%q) = %v, want an error mentioning %q", tc.url, err, tc.mention)
		}
	}
	// Where url.Parse still reads the last colon as the port separator, SplitHostPort
	// refuses the unbracketed address.
	t.Run("lenient url.Parse", func(t *testing.T) {
		t.Setenv("GODEBUG", "urlstrictcolons=0")
		if _, err := url.Parse("http://fd00::5:2379"); err != nil {
			t.Skipf("GODEBUG=urlstrictcolons=0 has no effect here: %v", err)
		}
		for _, s := range []string{"http://fd00::5:2379", "http://fd00::5"} {
			if err := checkDialURL(s); err == nil || !strings.Contains(err.Error(), "brackets") {
				t.Errorf("checkDialURL(%q) = %v, want a refusal hinting at brackets", s, err)
			}
		}
	})
}

// urlsIn returns the URL-looking parts of a flag or variable: flags and lists separate
// URLs with '=' and ','.
func urlsIn(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '=' || r == ',' || r == ' ' }) {
		if strings.Contains(f, "://") {
			out = append(out, f)
		}
	}
	return out
}

func TestURLsIn(t *testing.T) {
	got := urlsIn("--initial-cluster=a=http://a.c.ns.svc:2380,b=https://[fd00::5]:2380")
	if len(got) != 2 || got[0] != "http://a.c.ns.svc:2380" || got[1] != "https://[fd00::5]:2380" {
		t.Errorf("urlsIn = %q", got)
	}
}

// podStrings are the strings of a pod a process reads: commands, arguments and variable
// values of every container.
func podStrings(p *corev1.Pod) []string {
	var out []string
	for _, ctr := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		out = append(out, ctr.Command...)
		out = append(out, ctr.Args...)
		for _, e := range ctr.Env {
			out = append(out, e.Value)
		}
	}
	return out
}

// Every URL a rendered pod carries must be one a process can dial or bind: host:port
// splits, so an IPv6 address is in brackets. The only IP the operator passes into a pod
// is a pod IP, the recovery source (the controller joins it with its port); the test
// gives it an IPv6 one. Other URLs carry DNS names or the unspecified address.
func TestRenderedURLsSplitIntoHostAndPort(t *testing.T) {
	const source = "http://[fd00:10:244::5]:2379"
	plain := coreosSample("3.7.3")
	recovering := coreosSample("3.7.3")
	recover := recoveringMember(recovering, ClusterToken(recovering)+"-r1")
	recover.Recovery.SourceURL = source
	restored, step := restoredCluster(t, v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", Endpoint: "http://minio.backup.svc:9000"}, testSHA)
	tls := tlsCluster("p", "s")
	tls.Spec.TLS.Static.OperatorSecret = "op"
	tlsRecover := recoveringMember(tls, ClusterToken(tls)+"-r1")
	tlsRecover.Recovery.SourceURL = ClientURL(tls, "example-0001", "cluster.local")
	for name, in := range map[string]Input{
		"plain":         {Cluster: plain, Members: bootstrap(plain, 3, "")},
		"TLS":           {Cluster: tls, ClusterDomain: "cluster.local", Members: bootstrap(tls, 3, "cluster.local")},
		"recovery IPv6": {Cluster: recovering, ClusterDomain: "cluster.local", Members: []Member{recover}},
		"recovery TLS":  {Cluster: tls, ClusterDomain: "cluster.local", Members: []Member{tlsRecover}},
		"restore":       {Cluster: restored, Members: bootstrap(restored, 3, ""), Restore: step},
	} {
		t.Run(name, func(t *testing.T) {
			got := mustRender(t, in)
			seen := 0
			for _, p := range got.pods {
				for _, s := range podStrings(p) {
					if strings.Contains(s, "$(POD_IP)") {
						t.Errorf("%s: %q refers to POD_IP, which the chart no longer sets", p.Name, s)
					}
					for _, raw := range urlsIn(s) {
						seen++
						u, err := url.Parse(raw)
						if err != nil {
							t.Errorf("%s: %q in %q: %v", p.Name, raw, s, err)
							continue
						}
						if _, _, err := net.SplitHostPort(u.Host); err != nil {
							t.Errorf("%s: %q in %q: host:port does not split (an unbracketed IPv6 address?): %v", p.Name, raw, s, err)
						}
					}
				}
			}
			if seen == 0 {
				t.Fatalf("no URL found; the test checks nothing")
			}
		})
	}
	got := mustRender(t, Input{Cluster: recovering, ClusterDomain: "cluster.local", Members: []Member{recover}})
	if v, _ := flag(t, got.pods[recover.Name].Spec.InitContainers[0].Args, "from-member"); v != source {
		t.Errorf("--from-member=%q, want the IPv6 source %q as given", v, source)
	}
}

// Listeners take the unspecified address 0.0.0.0 (dual-stack in Go where the kernel
// allows it, plain IPv4 where it has no IPv6; see pods.yaml), on the ports the
// Services, peers and probes use; the probes name no host, so they reach the metrics
// listener at the pod IP.
func TestListenersTakeUnspecifiedAddress(t *testing.T) {
	for _, c := range []*v1beta2.EtcdCluster{coreosSample("3.6.16"), coreosSample("3.5.17"), tlsCluster("p", "s"), tlsCluster("", "s")} {
		got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
		ctr := etcdContainer(t, got.pods["example-0000"])
		for flagName, want := range map[string]struct {
			scheme string
			port   int
		}{
			"listen-peer-urls":    {scheme(PeerTLS(c)), PeerPort},
			"listen-client-urls":  {scheme(ClientTLS(c)), ClientPort},
			"listen-metrics-urls": {"http", MetricsPort},
		} {
			v, ok := flag(t, ctr.Args, flagName)
			u, err := url.Parse(v)
			if !ok || err != nil || strings.Contains(v, ",") {
				t.Errorf("--%s=%q (present %v): want one URL (%v)", flagName, v, ok, err)
				continue
			}
			if u.Scheme != want.scheme || u.Hostname() != "0.0.0.0" || u.Port() != strconv.Itoa(want.port) || u.Path != "" {
				t.Errorf("--%s=%q, want %s://0.0.0.0:%d", flagName, v, want.scheme, want.port)
			}
		}
		for _, e := range ctr.Env {
			if e.Name == "POD_IP" {
				t.Errorf("env POD_IP rendered; nothing refers to it")
			}
		}
		for _, pr := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe, ctr.StartupProbe} {
			if pr == nil {
				continue
			}
			if g := pr.HTTPGet; g == nil || g.Host != "" || g.Port.IntValue() != MetricsPort {
				t.Errorf("probe %+v: want an httpGet on the metrics port %d with no host", pr.ProbeHandler, MetricsPort)
			}
		}
	}
}
