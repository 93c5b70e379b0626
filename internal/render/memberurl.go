package render

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// MemberClientURL is the client URL the operator dials a member pod at, whichever of its
// controllers dials (the cluster's own, or a backup of it): with TLS the member's DNS
// name, which its server certificate names; otherwise its pod IP, known as soon as the
// pod runs, joined to the port with brackets if it is IPv6.
func MemberClientURL(c *v1beta2.EtcdCluster, p *corev1.Pod, clusterDomain string) string {
	if ClientTLS(c) {
		return ClientURL(c, p.Name, clusterDomain)
	}
	return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(v1beta2.EtcdClientPort))
}
