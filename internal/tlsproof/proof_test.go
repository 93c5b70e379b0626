package tlsproof

import (
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
)

func pair(secret string, cert, ca []byte) Pair {
	return Pair{Secret: secret, CertKey: "peer.crt", CAKey: "peer-ca.crt", Cert: cert, CA: ca}
}

func TestRotation(t *testing.T) {
	oldCA, newCA, otherCA := testpki.NewCA(t, "old"), testpki.NewCA(t, "new"), testpki.NewCA(t, "other")
	hosts := []string{"a.c.ns.svc", "b.c.ns.svc"}
	names := []string{"*.c.ns.svc"}
	oldCert, _ := oldCA.Issue(t, "old", names, nil)
	sameCACert, _ := oldCA.Issue(t, "renewed", names, nil)
	newCert, _ := newCA.Issue(t, "new", names, nil)
	otherCert, _ := otherCA.Issue(t, "other", names, nil)
	wrongHost, _ := oldCA.Issue(t, "wrong", []string{"*.x.ns.svc"}, nil)
	both := append(append([]byte{}, oldCA.PEM...), newCA.PEM...)
	running := []Pair{pair("old", oldCert, oldCA.PEM)}
	now := time.Now()

	for _, tc := range []struct {
		name    string
		running []Pair
		next    Pair
		want    string // "" = proven
	}{
		{"same CA, renewed certificate", running, pair("renewed", sameCACert, oldCA.PEM), ""},
		{"signed by a CA the running members do not trust", running, pair("foreign", otherCert, otherCA.PEM),
			`secret "foreign" (peer.crt) does not verify against the CA bundle of secret "old" (peer-ca.crt): signed by an authority`},
		{"new CA, running members already trust both", []Pair{pair("old", oldCert, both)}, pair("new", newCert, both), ""},
		{"new CA, running members trust only the old one", running, pair("new", newCert, both),
			`secret "new" (peer.crt) does not verify against the CA bundle of secret "old"`},
		{"new bundle drops the old CA", []Pair{pair("old", oldCert, both)}, pair("new", newCert, newCA.PEM),
			`secret "old" (peer.crt) does not verify against the CA bundle of secret "new"`},
		{"certificate misses a member host", running, pair("wrong", wrongHost, oldCA.PEM),
			`secret "wrong" (peer.crt) is not valid for member host a.c.ns.svc`},
		{"not PEM", running, pair("junk", []byte("junk"), oldCA.PEM), `secret "junk": "peer.crt" holds no PEM certificate`},
		{"mid-rotation: pods on old and new, next is new", []Pair{pair("old", oldCert, both), pair("new", newCert, both)}, pair("new", newCert, both), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Rotation(Peer, tc.running, tc.next, hosts, now)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("proven, want refused with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRotationExpired(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	cert, _ := ca.Issue(t, "m", []string{"*.c.ns.svc"}, nil)
	p := pair("s", cert, ca.PEM)
	err := Rotation(Server, nil, p, nil, time.Now().Add(48*time.Hour))
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("got %v, want expired", err)
	}
}

func TestOperator(t *testing.T) {
	ca, other := testpki.NewCA(t, "ca"), testpki.NewCA(t, "other")
	srv, _ := ca.Issue(t, "server", []string{"*.c.ns.svc"}, nil)
	cli, _ := ca.Issue(t, "client", nil, nil)
	foreign, _ := other.Issue(t, "client", nil, nil)
	servers := []Pair{{Secret: "server", CertKey: "server.crt", CAKey: "server-ca.crt", Cert: srv, CA: ca.PEM}}
	op := Pair{Secret: "op", CertKey: "etcd-client.crt", CAKey: "etcd-client-ca.crt", Cert: cli, CA: ca.PEM}
	if err := Operator(op, servers, time.Now()); err != nil {
		t.Fatalf("refused: %v", err)
	}
	op.Cert = foreign
	if err := Operator(op, servers, time.Now()); err == nil || !strings.Contains(err.Error(), `secret "op" (etcd-client.crt) does not verify against the CA bundle of secret "server" (server-ca.crt)`) {
		t.Fatalf("got %v", err)
	}
	op.Cert, op.CA = cli, other.PEM
	if err := Operator(op, servers, time.Now()); err == nil || !strings.Contains(err.Error(), `secret "server" (server.crt) does not verify against the CA bundle of secret "op" (etcd-client-ca.crt)`) {
		t.Fatalf("got %v", err)
	}
}
