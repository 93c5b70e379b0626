package framework

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"sort"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
)

// BenchClusterDomain is the DNS domain of the bench: its kubelet writes records under it
// and its resolv.conf search list names it, so the in-process operator detects it and
// advertises <pod>.<cluster>.<ns>.svc.cluster.local. Certificates must name it.
const BenchClusterDomain = "cluster.local"

// ClusterTLS is a throw-away PKI for one EtcdCluster with spec.TLS.static: one CA signs
// the peer, server and operator (client) certificates, in the Secret layouts the chart
// and the operator read.
type ClusterTLS struct {
	Cluster, Namespace string
	// CAPEM is the CA certificate, the trust root of every Secret.
	CAPEM []byte

	ca *testpki.CA

	peerCert, peerKey     []byte
	serverCert, serverKey []byte
	clientCert, clientKey []byte
}

// NewClusterTLS creates the CA and issues:
//   - the peer certificate for *.<cluster>.<ns>.svc[.cluster.local] plus IP 127.0.0.1:
//     on the bench every pod shares one network namespace, so outgoing peer connections
//     leave from 127.0.0.1, and etcd's --peer-client-cert-auth checks the connecting
//     address against the client certificate's IP SANs (or what its DNS names resolve to);
//   - the server certificate for the member names and the client Service's names (what
//     the operator, backups and applications dial);
//   - one client certificate, for the operator Secret and tests.
//
// Every certificate allows server and client use: etcd presents its peer certificate
// both ways.
func NewClusterTLS(t testing.TB, cluster, namespace string) *ClusterTLS {
	t.Helper()
	return NewClusterTLSWithCA(t, cluster, namespace, testpki.NewCA(t, cluster+" test CA"))
}

// NewClusterTLSWithCA is NewClusterTLS with certificates issued by ca.
func NewClusterTLSWithCA(t testing.TB, cluster, namespace string, ca *testpki.CA) *ClusterTLS {
	t.Helper()
	c := &ClusterTLS{Cluster: cluster, Namespace: namespace, ca: ca, CAPEM: ca.PEM}

	var members, service []string
	svc := cluster + "-client"
	for _, d := range []string{"", "." + BenchClusterDomain} {
		members = append(members, fmt.Sprintf("*.%s.%s.svc%s", cluster, namespace, d))
		service = append(service, fmt.Sprintf("%s.%s.svc%s", svc, namespace, d))
	}
	service = append(service, svc, svc+"."+namespace, "localhost")
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	c.peerCert, c.peerKey = c.Issue(t, cluster+" peer", members, loopback)
	c.serverCert, c.serverKey = c.Issue(t, cluster+" server", append(members, service...), loopback)
	c.clientCert, c.clientKey = c.Issue(t, cluster+" client", nil, nil)
	return c
}

// Renew issues new peer, server and client certificates from the same CA (a rotation
// that keeps the trust root): Secrets made afterwards hold the new ones.
func (c *ClusterTLS) Renew(t testing.TB) {
	t.Helper()
	fresh := NewClusterTLSWithCA(t, c.Cluster, c.Namespace, c.ca)
	c.peerCert, c.peerKey = fresh.peerCert, fresh.peerKey
	c.serverCert, c.serverKey = fresh.serverCert, fresh.serverKey
	c.clientCert, c.clientKey = fresh.clientCert, fresh.clientKey
}

// Issue signs a certificate for the names and IPs (server and client use) and returns
// it and its key in PEM.
func (c *ClusterTLS) Issue(t testing.TB, cn string, dns []string, ips []net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	return c.ca.Issue(t, cn, dns, ips)
}

func (c *ClusterTLS) secret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace}, Data: data}
}

// PeerSecret is spec.TLS.static.member.peerSecret: peer.crt, peer.key, peer-ca.crt.
func (c *ClusterTLS) PeerSecret(name string) *corev1.Secret {
	return c.secret(name, map[string][]byte{"peer.crt": c.peerCert, "peer.key": c.peerKey, "peer-ca.crt": c.CAPEM})
}

// ServerSecret is spec.TLS.static.member.serverSecret: server.crt, server.key, server-ca.crt.
func (c *ClusterTLS) ServerSecret(name string) *corev1.Secret {
	return c.secret(name, map[string][]byte{"server.crt": c.serverCert, "server.key": c.serverKey, "server-ca.crt": c.CAPEM})
}

// OperatorSecret is spec.TLS.static.operatorSecret (and an EtcdBackup's clientTLSSecret):
// etcd-client.crt, etcd-client.key, etcd-client-ca.crt.
func (c *ClusterTLS) OperatorSecret(name string) *corev1.Secret {
	return c.secret(name, map[string][]byte{etcdadmin.ClientCertKey: c.clientCert, etcdadmin.ClientKeyKey: c.clientKey, etcdadmin.ClientCAKey: c.CAPEM})
}

// ClientConfig trusts the CA and presents the client certificate.
func (c *ClusterTLS) ClientConfig(t testing.TB) *tls.Config {
	t.Helper()
	pair, err := tls.X509KeyPair(c.clientCert, c.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.NoCertConfig()
	cfg.Certificates = []tls.Certificate{pair}
	return cfg
}

// NoCertConfig trusts the CA but presents no certificate: members with
// --client-cert-auth must refuse it.
func (c *ClusterTLS) NoCertConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.Cert)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// StaticTLS is the spec.TLS naming the three Secrets.
func StaticTLS(peerSecret, serverSecret, operatorSecret string) *etcdv1beta2.TLSPolicy {
	return &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: peerSecret, ServerSecret: serverSecret},
		OperatorSecret: operatorSecret,
	}}
}

// EtcdClientTLS connects through the client Service's DNS name over https, as an
// application of a TLS cluster would.
func (e *Env) EtcdClientTLS(name string, cfg *tls.Config) *clientv3.Client {
	e.t.Helper()
	c := e.Cluster(name)
	ep := render.ServiceClientURL(c, "")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: cfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatalf("etcd client %s: %v", ep, err)
	}
	e.t.Cleanup(func() { cli.Close() })
	return cli
}

// MemberEndpointsTLS are the https URLs of the cluster's member pods by DNS name (the
// server certificate names those, not pod IPs), for pods with an IP, not being deleted.
func (e *Env) MemberEndpointsTLS(name string) []string {
	var eps []string
	for _, p := range e.MemberPods(name) {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			eps = append(eps, fmt.Sprintf("https://%s.%s.%s.svc:%d", p.Name, name, p.Namespace, etcdv1beta2.EtcdClientPort))
		}
	}
	sort.Strings(eps)
	return eps
}

// MembersTLS is etcd's member list (with URLs), asked of the member pods over TLS. It
// never fails the test itself.
func (e *Env) MembersTLS(name string, cfg *tls.Config) ([]*etcdserverpb.Member, error) {
	return memberList(e.MemberEndpointsTLS(name), cfg)
}

// WaitAvailableTLS is WaitAvailable for a cluster with client TLS: the member list is
// asked over https with cfg.
func (e *Env) WaitAvailableTLS(name string, size int, cfg *tls.Config, timeout time.Duration) *etcdv1beta2.EtcdCluster {
	e.t.Helper()
	return e.waitAvailable(name, size, timeout, " (TLS)", func() ([]*EtcdMember, error) {
		ms, err := e.MembersTLS(name, cfg)
		return ToEtcdMembers(ms), err
	})
}
