package certmanager

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/certissue"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var names = certissue.Names{Cluster: "db", Namespace: "ns", Domain: "cluster.local", ServiceIPs: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("fd00::1")}}

func ca(t *testing.T) certissue.KeyPair {
	t.Helper()
	kp, err := certissue.NewCA("test", 24*time.Hour, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// leaves are three certificates signed by ca, with ca as the bundle.
func leaves(t *testing.T, ca certissue.KeyPair) certissue.Leaves {
	t.Helper()
	l := certissue.Leaves{Trust: ca.CertPEM}
	for _, x := range []struct {
		kind certissue.Kind
		out  *certissue.KeyPair
	}{{certissue.KindPeer, &l.Peer}, {certissue.KindServer, &l.Server}, {certissue.KindClient, &l.Client}} {
		dns, ips := certissue.SANs(x.kind, names)
		kp, err := certissue.Issue(ca, x.kind, "db "+string(x.kind), dns, ips, time.Hour, now.Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		*x.out = kp
	}
	return l
}

func merged(t *testing.T, b ...[]byte) []byte {
	m, err := certissue.MergeBundle(b...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecide(t *testing.T) {
	oldCA, newCA := ca(t), ca(t)
	a, b := leaves(t, oldCA), leaves(t, oldCA) // b: a renewal by the same CA
	n := leaves(t, newCA)                      // a new CA's
	both := merged(t, oldCA.CertPEM, newCA.CertPEM)
	mixed := certissue.Leaves{Peer: n.Peer, Server: n.Server, Client: a.Client, Trust: both}
	withTrust := func(l certissue.Leaves, trust []byte) *certissue.Leaves { l.Trust = trust; return &l }
	long := now.Add(-CAStepDwell)
	for _, tc := range []struct {
		name      string
		cur       *certissue.Leaves
		since     time.Time
		in        certissue.Leaves
		rolledOut bool
		want      Step
		leaves    certissue.Leaves // the next generation's certificates
		trust     []byte
	}{
		{"none yet: cert-manager's", nil, long, a, false, First, a, oldCA.CertPEM},
		{"nothing new", &a, long, a, true, Keep, certissue.Leaves{}, nil},
		{"renewed, members still moving", &a, long, b, false, Keep, certissue.Leaves{}, nil},
		{"renewed by the same CA: one step, at once", &a, now, b, true, Renew, b, oldCA.CertPEM},
		{"a new CA: trusted beside the old first, at once", &a, now, n, true, TrustNewCA, a, both},
		{"a new CA trusted: waits the dwell", withTrust(a, both), now.Add(-time.Second), n, true, Keep, certissue.Leaves{}, nil},
		{"a new CA trusted, dwell over: presented", withTrust(a, both), long, n, true, SwitchToNewCA, n, both},
		{"the new CA presented, members moving", withTrust(n, both), long, n, false, Keep, certissue.Leaves{}, nil},
		{"the new CA presented: waits the dwell", withTrust(n, both), now, n, true, Keep, certissue.Leaves{}, nil},
		{"the new CA presented, dwell over: the old dropped", withTrust(n, both), long, n, true, DropOldCA, n, newCA.CertPEM},
		// cert-manager moved peer and server to the new CA, client not yet: the merged
		// bundle {old,new} was trusted first; presenting the new CA's certificates
		// still waits the dwell after that, though the bundle does not change.
		{"some renewed by a new CA: trusted, waits the dwell", withTrust(a, both), now.Add(-time.Second), mixed, true, Keep, certissue.Leaves{}, nil},
		{"some renewed by a new CA: dwell over, presented", withTrust(a, both), long, mixed, true, SwitchToNewCA, mixed, both},
		{"renewed again mid-rotation, same new CA", withTrust(a, both), long, leaves(t, newCA), true, SwitchToNewCA, certissue.Leaves{}, both},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.cur, tc.since, tc.in, tc.rolledOut, now, CAStepDwell)
			if d.Step != tc.want {
				t.Fatalf("step %q (%s), want %q", d.Step, d.Reason, tc.want)
			}
			if d.Step == Keep {
				if strings.Contains(tc.name, "waits the dwell") && (d.Wait <= 0 || d.Wait > CAStepDwell) {
					t.Errorf("waits the dwell, requeue after %v", d.Wait)
				}
				return
			}
			if tc.leaves.Peer.CertPEM != nil && string(d.Next.Peer.CertPEM) != string(tc.leaves.Peer.CertPEM) {
				t.Error("next generation: not the expected certificates")
			}
			if !certissue.SameBundle(d.Next.Trust, tc.trust) {
				t.Error("next generation: not the expected CA bundle")
			}
			// Whatever the step, every certificate of the next generation verifies
			// against its bundle, and the bundle in effect still verifies the
			// certificates the next one presents (members on both meet).
			for _, x := range []struct {
				kind certissue.Kind
				kp   certissue.KeyPair
			}{{certissue.KindPeer, d.Next.Peer}, {certissue.KindServer, d.Next.Server}, {certissue.KindClient, d.Next.Client}} {
				leaf, err := certissue.ParseCert(x.kp.CertPEM)
				if err != nil {
					t.Fatal(err)
				}
				if err := certissue.Verify(x.kind, leaf, d.Next.Trust, now); err != nil {
					t.Errorf("%s: next bundle: %v", x.kind, err)
				}
				if tc.cur != nil {
					if err := certissue.Verify(x.kind, leaf, tc.cur.Trust, now); err != nil {
						t.Errorf("%s: the bundle in effect does not verify the next certificate: %v", x.kind, err)
					}
				}
			}
		})
	}
}

func TestRead(t *testing.T) {
	c := ca(t)
	l := leaves(t, c)
	good := map[string][]byte{TLSCertKey: l.Server.CertPEM, TLSKeyKey: l.Server.KeyPEM, CAKey: c.CertPEM}
	if _, _, err := Read("db-cm-server", certissue.KindServer, good, names, now); err != nil {
		t.Fatalf("good server Secret: %v", err)
	}
	for name, tc := range map[string]struct {
		kind certissue.Kind
		data map[string][]byte
		want string
	}{
		"empty":                  {certissue.KindServer, map[string][]byte{}, "has no tls.crt"},
		"key of another":         {certissue.KindServer, map[string][]byte{TLSCertKey: l.Server.CertPEM, TLSKeyKey: l.Peer.KeyPEM, CAKey: c.CertPEM}, "do not pair"},
		"other CA":               {certissue.KindServer, map[string][]byte{TLSCertKey: l.Server.CertPEM, TLSKeyKey: l.Server.KeyPEM, CAKey: ca(t).CertPEM}, "does not verify"},
		"client as server":       {certissue.KindServer, map[string][]byte{TLSCertKey: l.Client.CertPEM, TLSKeyKey: l.Client.KeyPEM, CAKey: c.CertPEM}, "does not verify"},
		"peer lacks the Service": {certissue.KindServer, map[string][]byte{TLSCertKey: l.Peer.CertPEM, TLSKeyKey: l.Peer.KeyPEM, CAKey: c.CertPEM}, "does not name"},
	} {
		_, _, err := Read("db-cm-server", tc.kind, tc.data, names, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `Certificate "db-cm-server"`) {
			t.Errorf("%s: %v, want %q naming the Certificate", name, err, tc.want)
		}
	}
}

func TestSpecAndReady(t *testing.T) {
	s := Spec(certissue.KindServer, names, Ref{Name: "ca", Duration: 48 * time.Hour})
	if s.SecretName != "db-cm-server" || s.IssuerRef.Kind != "Issuer" || s.IssuerRef.Group != "cert-manager.io" ||
		s.Duration.Duration != 48*time.Hour || s.RenewBefore != nil || s.PrivateKey.RotationPolicy != cmv1.RotationPolicyAlways {
		t.Errorf("server spec %+v", s)
	}
	ipv6 := false
	for _, ip := range s.IPAddresses {
		ipv6 = ipv6 || ip == "fd00::1"
	}
	if !ipv6 {
		t.Errorf("server spec lacks the Service's IPv6 address: %v", s.IPAddresses)
	}
	if cl := Spec(certissue.KindClient, names, Ref{Name: "ca", Kind: "ClusterIssuer"}); len(cl.DNSNames) != 0 || cl.IssuerRef.Kind != "ClusterIssuer" {
		t.Errorf("client spec %+v", cl)
	}
	cert := &cmv1.Certificate{}
	cert.Name, cert.Generation = "db-cm-peer", 2
	if err := Ready(cert); err == nil || !strings.Contains(err.Error(), "no Ready condition") {
		t.Errorf("no condition: %v", err)
	}
	cert.Status.Conditions = []cmv1.CertificateCondition{{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionFalse,
		Reason: "IssuerNotFound", Message: strings.Repeat("x", 1000), ObservedGeneration: 2}}
	if err := Ready(cert); err == nil || !strings.Contains(err.Error(), "IssuerNotFound") || len(err.Error()) > 400 {
		t.Errorf("not ready: %v", err)
	}
	cert.Status.Conditions[0].Status, cert.Status.Conditions[0].ObservedGeneration = cmmeta.ConditionTrue, 1
	if err := Ready(cert); err == nil || !strings.Contains(err.Error(), "earlier spec") {
		t.Errorf("ready for an earlier spec: %v", err)
	}
	cert.Status.Conditions[0].ObservedGeneration = 2
	if err := Ready(cert); err != nil {
		t.Errorf("ready: %v", err)
	}
}

// caOf is a CA signed by parent (self-signed when parent is nil) that may sign CAs:
// a root and its intermediate, as an issuer whose CA is an intermediate has.
func caOf(t *testing.T, cn string, parent *certissue.KeyPair) certissue.KeyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(12 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	signer, parentCert := crypto.Signer(key), tmpl
	if parent != nil {
		pp, err := tls.X509KeyPair(parent.CertPEM, parent.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		signer = pp.PrivateKey.(crypto.Signer)
		if parentCert, err = certissue.ParseCert(parent.CertPEM); err != nil {
			t.Fatal(err)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certissue.KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

// An issuer whose CA is an intermediate writes leaf+intermediate in tls.crt and the root
// in ca.crt: the chain verifies, and Read hands back the whole chain (members present it).
func TestReadChainThroughAnIntermediate(t *testing.T) {
	root := caOf(t, "root", nil)
	inter := caOf(t, "intermediate", &root)
	l := leaves(t, inter)
	chain := append(append([]byte{}, l.Server.CertPEM...), inter.CertPEM...)
	data := map[string][]byte{TLSCertKey: chain, TLSKeyKey: l.Server.KeyPEM, CAKey: root.CertPEM}
	kp, bundle, err := Read("db-cm-server", certissue.KindServer, data, names, now)
	if err != nil {
		t.Fatalf("leaf+intermediate against the root: %v", err)
	}
	if string(kp.CertPEM) != string(chain) || string(bundle) != string(root.CertPEM) {
		t.Errorf("Read did not keep the chain and the root as cert-manager wrote them")
	}
	data[TLSCertKey] = l.Server.CertPEM // the intermediate left out: no path to the root
	if _, _, err := Read("db-cm-server", certissue.KindServer, data, names, now); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("leaf alone against the root: %v, want does not verify", err)
	}
}
