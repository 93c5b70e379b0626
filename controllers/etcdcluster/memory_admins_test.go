package etcdcluster

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

func dialCounting(t *testing.T, dials *int, eps []string) func() (*etcdadmin.Admin, error) {
	return func() (*etcdadmin.Admin, error) {
		*dials++
		a, err := etcdadmin.New(etcdadmin.Config{Endpoints: eps}) // connects lazily: nothing listens
		if err == nil {
			t.Cleanup(func() { _ = a.Close() })
		}
		return a, err
	}
}

func closed(a *etcdadmin.Admin) bool { return a.Client().Ctx().Err() != nil }

// One client per cluster is kept across reconciles and follows the endpoints; a new
// cluster under the same name or a new certificate gets a new client, and the old one is
// closed; a deleted cluster's client is closed and dropped.
func TestAdminCacheKeepsOneClientPerCluster(t *testing.T) {
	var c adminCache
	dials := 0
	eps1 := []string{"http://10.0.0.1:2379"}
	eps2 := []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}

	a1, err := c.get("ns/a", "uid-1", eps1, nil, adminCreds{}, dialCounting(t, &dials, eps1))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.get("ns/a", "uid-1", eps2, nil, adminCreds{}, dialCounting(t, &dials, eps2))
	if err != nil {
		t.Fatal(err)
	}
	if again != a1 || dials != 1 {
		t.Fatalf("second reconcile: same client %v, %d dials; want the kept one, 1 dial", again == a1, dials)
	}
	if !slices.Equal(a1.Endpoints(), eps2) {
		t.Fatalf("endpoints %v, want %v", a1.Endpoints(), eps2)
	}
	if _, err := c.get("ns/b", "uid-2", eps1, nil, adminCreds{}, dialCounting(t, &dials, eps1)); err != nil || dials != 2 || c.len() != 2 {
		t.Fatalf("another cluster: err %v, %d dials, %d entries; want its own client", err, dials, c.len())
	}

	recreated, _ := c.get("ns/a", "uid-3", eps1, nil, adminCreds{}, dialCounting(t, &dials, eps1))
	if recreated == a1 || !closed(a1) || dials != 3 {
		t.Fatalf("cluster recreated under the same name: new client %v, old closed %v", recreated != a1, closed(a1))
	}
	withTLS, _ := c.get("ns/a", "uid-3", eps1, &tls.Config{ServerName: "x"}, adminCreds{}, dialCounting(t, &dials, eps1))
	if withTLS == recreated || !closed(recreated) {
		t.Fatal("a changed client certificate kept the old client")
	}
	withAuth, _ := c.get("ns/a", "uid-3", eps1, &tls.Config{ServerName: "x"}, adminCreds{"root", "pw"}, dialCounting(t, &dials, eps1))
	if withAuth == withTLS || !closed(withTLS) {
		t.Fatal("etcd credentials that came with auth kept the client without them")
	}
	withTLS = withAuth

	c.forget("ns/a")
	if !closed(withTLS) || c.len() != 1 {
		t.Fatalf("deleted cluster: client closed %v, %d entries left; want closed, 1", closed(withTLS), c.len())
	}
	c.forget("ns/a") // twice: nothing left to close
}

func TestSameClientTLS(t *testing.T) {
	cert := func(b byte) tls.Certificate { return tls.Certificate{Certificate: [][]byte{{b, 1, 2}}} }
	poolA, poolB := x509.NewCertPool(), x509.NewCertPool()
	poolB.AddCert(&x509.Certificate{Raw: []byte{9}, RawSubject: []byte{9}})
	for _, tc := range []struct {
		name string
		a, b *tls.Config
		same bool
	}{
		{"both plain", nil, nil, true},
		{"plain vs TLS", nil, &tls.Config{}, false},
		{"same cert and CA", &tls.Config{Certificates: []tls.Certificate{cert(1)}, RootCAs: poolA}, &tls.Config{Certificates: []tls.Certificate{cert(1)}, RootCAs: poolA}, true},
		{"rotated cert", &tls.Config{Certificates: []tls.Certificate{cert(1)}}, &tls.Config{Certificates: []tls.Certificate{cert(2)}}, false},
		{"rotated CA", &tls.Config{RootCAs: poolA}, &tls.Config{RootCAs: poolB}, false},
		{"CA vs system roots", &tls.Config{RootCAs: poolA}, &tls.Config{}, false},
		{"server name", &tls.Config{ServerName: "a"}, &tls.Config{ServerName: "b"}, false},
	} {
		if got := sameClientTLS(tc.a, tc.b); got != tc.same {
			t.Errorf("%s: same = %v, want %v", tc.name, got, tc.same)
		}
	}
}

// A client made with credentials that no member could check runs without them
// (etcdadmin.AuthPending): the cache makes it again on the next reconcile, with the same
// certificate and credentials, and closes the one it replaces; a client that is not
// pending is kept.
func TestAdminCacheRemakesAuthPendingClient(t *testing.T) {
	var c adminCache
	dials := 0
	eps := []string{"http://127.0.0.1:1"} // nothing answers: the credentials cannot be checked
	creds := adminCreds{"root", "pw"}
	dial := func() (*etcdadmin.Admin, error) {
		dials++
		a, err := etcdadmin.New(etcdadmin.Config{Endpoints: eps, Username: creds.user, Password: creds.password, DialTimeout: 200 * time.Millisecond})
		if err == nil {
			t.Cleanup(func() { _ = a.Close() })
		}
		return a, err
	}
	pending, err := c.get("ns/a", "uid-1", eps, nil, creds, dial)
	if err != nil {
		t.Fatal(err)
	}
	if !pending.AuthPending() {
		t.Fatal("a client whose credentials no member checked is not AuthPending")
	}
	again, err := c.get("ns/a", "uid-1", eps, nil, creds, dial)
	if err != nil {
		t.Fatal(err)
	}
	if again == pending || dials != 2 || !closed(pending) {
		t.Fatalf("AuthPending client: remade %v (%d dials), old closed %v; want a new client and the old one closed", again != pending, dials, closed(pending))
	}
}
