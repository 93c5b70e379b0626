// Package backuptarget tells which EtcdCluster of a namespace an EtcdBackup's
// spec.etcdEndpoints name. It only reads names: a name is never dialled (whoever may edit
// the namespace's Services could steer it elsewhere). The EtcdBackup controller resolves
// its target with it, and the EtcdCluster controller finds the backups of a cluster that
// lost every member.
package backuptarget

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// EndpointHost is the lower-case host of an etcd endpoint: a URL (http or https) or a
// bare host[:port].
func EndpointHost(endpoint string) (string, error) {
	hostport := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", fmt.Errorf("spec.etcdEndpoints: %q is not a URL", endpoint)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("spec.etcdEndpoints: %q: scheme must be http or https", endpoint)
		}
		if u.User != nil {
			return "", fmt.Errorf("spec.etcdEndpoints: %q must not carry credentials", endpoint)
		}
		hostport = u.Host
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return "", fmt.Errorf("spec.etcdEndpoints: %q has no host", endpoint)
	}
	return host, nil
}

// HostClusterCandidates lists the cluster names a DNS name could denote in the namespace:
//
//	<svc> | <svc>.<ns> | <svc>.<ns>.svc[.<domain>]                    a cluster's Service
//	<member>.<cluster> | <member>.<cluster>.<ns>[.svc[.<domain>]]     a member's name
//
// where <svc> is <cluster>-client or the headless <cluster>, and <ns> must be the
// backup's namespace. Short names count as the namespace's (as they did for CoreOS's
// backup operator running beside the cluster). The domain is not checked: the name is
// never dialled.
func HostClusterCandidates(host, namespace string) []string {
	l := strings.Split(host, ".")
	var out []string
	service := func(svc string) {
		out = append(out, svc)
		if c, ok := strings.CutSuffix(svc, "-client"); ok && c != "" {
			out = append(out, c)
		}
	}
	inNamespaceDNS := func(rest []string) bool { // after <ns>: nothing, or svc[.<domain>]
		return len(rest) == 0 || rest[0] == "svc"
	}
	switch {
	case len(l) == 1:
		service(l[0])
	case len(l) >= 2 && l[1] == namespace && inNamespaceDNS(l[2:]):
		service(l[0])
	}
	switch {
	case len(l) == 2:
		out = append(out, l[1])
	case len(l) >= 3 && l[2] == namespace && inNamespaceDNS(l[3:]):
		out = append(out, l[1])
	}
	return out
}

// ClusterOfNames is the one cluster, of those named in clusters, that every endpoint
// names by DNS (its Services or a member's name in the namespace); "" when an endpoint
// names none, an IP, or more than one cluster. Pod IPs are not resolved here: a cluster
// that lost every member has none.
func ClusterOfNames(endpoints []string, namespace string, clusters map[string]bool) string {
	found := ""
	for _, ep := range endpoints {
		host, err := EndpointHost(ep)
		if err != nil || net.ParseIP(host) != nil {
			return ""
		}
		var match string
		for _, c := range HostClusterCandidates(host, namespace) {
			if !clusters[c] || c == match {
				continue
			}
			if match != "" {
				return "" // ambiguous, as the backup controller refuses it
			}
			match = c
		}
		if match == "" || found != "" && match != found {
			return ""
		}
		found = match
	}
	return found
}
