package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
)

// testCA is a throw-away certificate authority for one cluster: every member
// gets a certificate for its own IP (used to serve clients and peers, and as
// the client certificate towards its peers), tests get a client certificate.
// etcd reads them from files, so each is also written to the CA's directory.
type testCA struct {
	*testpki.CA
	caFile string
	dir    string
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	ca := &testCA{CA: testpki.NewCA(t, "etcdtest CA"), dir: t.TempDir()}
	ca.caFile = filepath.Join(ca.dir, "ca.crt")
	writeFile(t, ca.caFile, ca.PEM)
	return ca
}

// issue writes a certificate and key for name (valid for the given IPs, for
// both server and client use) and returns their paths.
func (ca *testCA) issue(t testing.TB, name string, ips ...string) (certFile, keyFile string) {
	t.Helper()
	var addrs []net.IP
	for _, ip := range ips {
		addrs = append(addrs, net.ParseIP(ip))
	}
	certPEM, keyPEM := ca.Issue(t, name, nil, addrs)
	certFile = filepath.Join(ca.dir, name+".crt")
	keyFile = filepath.Join(ca.dir, name+".key")
	writeFile(t, certFile, certPEM)
	writeFile(t, keyFile, keyPEM)
	return certFile, keyFile
}

// clientTLS returns a client configuration trusting the CA and presenting a
// fresh client certificate.
func (ca *testCA) clientTLS(t testing.TB, name string) *tls.Config {
	t.Helper()
	certFile, keyFile := ca.issue(t, name)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
