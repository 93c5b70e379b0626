// Package clusterdns is the cluster DNS of the bench's real nodes: CoreDNS serving the
// cluster domain from the API (the kubernetes plugin) as the kube-dns Service, and a
// fault that withholds chosen names for a while (Withholder).
//
// Withholding needs a data source CoreDNS re-reads within a second and that answers
// before the kubernetes plugin. CoreDNS runs plugins in its compile-time order
// (plugin.cfg), not the Corefile's: of the plugins that read files, hosts and template
// run before kubernetes, but hosts can only add addresses, never hide a name, and
// template is fixed at load; file and auto can hide names (they are authoritative) but
// run after kubernetes. The reload plugin would restart the whole server, including the
// kubernetes plugin's informers, at most every 2 s and only on a Corefile change. So
// the cluster zones are served in two steps inside the pod: the server on DNSPort runs
// auto over a directory of zone files (scanned every autoReload; a zone whose file is
// deleted is dropped) and forwards every other query to a server on 127.0.0.1 that runs
// the kubernetes plugin. A withheld name is a zone file whose zone is that name and
// holds only its SOA: the name and every name below it get NXDOMAIN (the file plugin
// keeps the SOA apart from its names, so even the zone's own name has no records).
// Without a withhold directory the kubernetes plugin answers on DNSPort directly. The
// forward goes to the same process, not to an upstream resolver: the bench has none, so
// names outside the cluster zones get NXDOMAIN from a template at once. There is no
// cache plugin: the bench's few names are answered from the informers' memory, and a
// cache would only delay the records the tests wait for.
package clusterdns

import (
	"fmt"
	"strings"
)

// Ports of the CoreDNS container.
const (
	// DNSPort is the container port of DNS (UDP and TCP); the kube-dns Service maps port
	// 53 to it. A high port lets CoreDNS run as non-root without capabilities: binding 53
	// would need CAP_NET_BIND_SERVICE, which a non-root process keeps across exec only as
	// a file capability on /coredns, which the bench's image builder does not write.
	DNSPort = 1053
	// HealthPort serves the health plugin's /health (the liveness probe).
	HealthPort = 8080
	// ReadyPort serves the ready plugin's /ready (the readiness probe): 200 once the
	// kubernetes plugin has synced with the API.
	ReadyPort = 8181
	// backPort is the kubernetes plugin's server on 127.0.0.1 when names are withheld.
	backPort = 1054
	// autoReload is how often the withhold directory is scanned: a withhold or its end
	// takes effect within this time.
	autoReload = "500ms"
	// ttl of the answers, in seconds: small, so that a record that changed is seen
	// soon by anything that caches.
	ttl = 1
)

// layout is where a Corefile's servers listen; the pod's, or a test's on loopback.
type layout struct {
	bind         string // address the DNS servers bind; "" for all
	dns, back    int
	health       string // host:port
	ready        string // host:port
	withheldDir  string // directory of withheld zones inside the pod; "" for none
	clusterZones string // the zones the cluster plugin serves, e.g. "cluster.local in-addr.arpa ip6.arpa"
}

func podLayout(o Options) layout {
	l := layout{
		dns: DNSPort, back: backPort,
		health:       fmt.Sprintf(":%d", HealthPort),
		ready:        fmt.Sprintf(":%d", ReadyPort),
		clusterZones: o.domain() + " in-addr.arpa ip6.arpa",
	}
	if o.WithholdDir != "" {
		l.withheldDir = withheldMount
	}
	return l
}

// Corefile is the configuration of the bench's CoreDNS for o.
func Corefile(o Options) string {
	return corefile(podLayout(o), kubernetesPlugin(podLayout(o).clusterZones))
}

func kubernetesPlugin(zones string) string {
	// pods insecure: <a-b-c-d>.<ns>.pod.<domain> answers any pod IP, as kubeadm's CoreDNS.
	return fmt.Sprintf("kubernetes %s {\n    pods insecure\n    ttl %d\n}", zones, ttl)
}

// corefile writes the servers of l with cluster, the plugin (and its block) answering
// the cluster zones. Names outside the cluster zones get NXDOMAIN at once: the bench
// has no upstream resolver, and a forward to one would only time out.
func corefile(l layout, cluster string) string {
	var b strings.Builder
	bind := ""
	if l.bind != "" {
		bind = "    bind " + l.bind + "\n"
	}
	fmt.Fprintf(&b, ".:%d {\n%s    errors\n    health %s\n    template ANY ANY {\n        rcode NXDOMAIN\n    }\n}\n", l.dns, bind, l.health)
	ready := "    ready " + l.ready + "\n" // with the plugin whose readiness it reports
	if l.withheldDir == "" {
		fmt.Fprintf(&b, "%s {\n%s    errors\n%s%s\n}\n", keys(l.clusterZones, l.dns), bind, ready, indent(cluster))
		return b.String()
	}
	// The zone files are db.<zone>; anything else in the directory (a file being
	// written) is ignored.
	fmt.Fprintf(&b, "%s {\n%s    errors\n    auto {\n        directory %s ^db\\.(.+)$ {1}\n        reload %s\n    }\n    forward . 127.0.0.1:%d\n}\n",
		keys(l.clusterZones, l.dns), bind, l.withheldDir, autoReload, l.back)
	fmt.Fprintf(&b, "%s {\n    bind 127.0.0.1\n    errors\n%s%s\n}\n", keys(l.clusterZones, l.back), ready, indent(cluster))
	return b.String()
}

// keys is a server block's address list: each zone with the port (a port applies only
// to the key it is written on).
func keys(zones string, port int) string {
	var ks []string
	for _, z := range strings.Fields(zones) {
		ks = append(ks, fmt.Sprintf("%s:%d", z, port))
	}
	return strings.Join(ks, " ")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
