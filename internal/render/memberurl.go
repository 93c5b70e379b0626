package render

import (
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// ServerTLSVolume is the chart's volume of the server TLS Secret (pods.yaml): a member
// pod has it exactly when its etcd serves TLS clients.
const ServerTLSVolume = "member-server-tls"

// ServesTLSClients: pod p's etcd serves TLS clients, as its volumes show. A pod's
// volumes cannot change, so this is what its etcd runs, whatever the spec says now.
func ServesTLSClients(p *corev1.Pod) bool { return PodSecretVolume(p, ServerTLSVolume) != "" }

// PodSecretVolume is the Secret that pod p's volume of that name mounts ("" if none).
func PodSecretVolume(p *corev1.Pod, volume string) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// DialTLS is whether a client of the members (the operator, a backup) dials them over
// https. One client dials every member, so one scheme must suit every pod it dials:
// https once the spec has client TLS and every such pod serves TLS clients, else http.
// While a plaintext cluster moves to TLS that is http until every member serves https
// too (every member serves plaintext clients until the last step starts), and while
// turning TLS on is refused it stays http.
func DialTLS(c *v1beta2.EtcdCluster, pods []*corev1.Pod) bool {
	if !ClientTLS(c) {
		return false
	}
	for _, p := range pods {
		if !ServesTLSClients(p) {
			return false
		}
	}
	return true
}

// MemberDialURL is the client URL a member pod is dialled at: over https its DNS name,
// which its server certificate names; over http its pod IP, known as soon as the pod
// runs, joined to the port with brackets if it is IPv6.
func MemberDialURL(c *v1beta2.EtcdCluster, p *corev1.Pod, clusterDomain string, useTLS bool) string {
	if useTLS {
		return fmt.Sprintf("https://%s:%d", MemberHost(c, p.Name, clusterDomain), ClientPort)
	}
	return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(v1beta2.EtcdClientPort))
}

// MemberClientURL is the client URL the operator dials a member pod at when the spec
// alone decides the scheme: https with client TLS.
func MemberClientURL(c *v1beta2.EtcdCluster, p *corev1.Pod, clusterDomain string) string {
	return MemberDialURL(c, p, clusterDomain, ClientTLS(c))
}
