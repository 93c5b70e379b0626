// Package certissue is the operator's built-in certificate authority for an etcd
// cluster (spec.tls.issuer.builtin in v1, spec.TLS.auto in v1beta2): a CA per cluster,
// the peer, server and client certificates it signs, the names they must carry, when
// they are renewed, and the steps of a CA rotation.
//
// Everything here is pure but for the randomness of key generation: the controller reads
// the Secrets, hands their bytes in, and writes what comes out. Errors name roles and
// keys, never key material.
//
// The state of a cluster's CA lives in one Secret (State): the CA that signs, the CA
// bundle members trust, the generation of leaf certificates in effect and, during a CA
// rotation, its phase. Each generation's leaves live in Secrets of their own that are
// never changed once written, so moving members from one generation to the next is the
// trust-checked rotation of static Secrets the controller already performs, one member
// at a time. A CA rotation takes three generations:
//
//  1. Trusting: a new CA is made; the bundle holds old and new; leaves are still signed
//     by the old CA. Once every member runs this generation, all of them trust both.
//  2. Switched: the new CA signs the leaves; the bundle still holds both, so members on
//     generation 1 and 2 trust each other.
//  3. Steady again: the bundle holds only the new CA.
//
// A generation is only started once every member runs the one before (Decide), so at
// most two generations are ever in use at once, and every pair of them trusts each other.
// Steps 2 and 3 also wait Settings.CAStepDwell after the step before, for clients: they
// follow the clients' Secret, which changes with each step, in their own time.
package certissue

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Kind is what a certificate is for; it is also the metric's kind label.
type Kind string

const (
	KindCA     Kind = "ca"
	KindPeer   Kind = "peer"
	KindServer Kind = "server"
	KindClient Kind = "client"
)

// Defaults of the lifetimes: leaves a quarter of a year, the CA five years; each is
// renewed once a third of its lifetime is left (after two thirds of it).
const (
	DefaultCertificateLifetime = 90 * 24 * time.Hour
	DefaultCALifetime          = 5 * 365 * 24 * time.Hour
	// DefaultCAStepDwell is how long a CA rotation waits, at the least, after each of
	// its first two steps before taking the next (Settings.CAStepDwell).
	DefaultCAStepDwell = 5 * time.Minute
	// MinLifetime is the shortest lifetime accepted (admission says the same): shorter
	// ones could not be rolled out member by member before they were due again.
	MinLifetime = 5 * time.Minute
)

// Settings are a cluster's lifetimes. Zero values take the defaults (WithDefaults).
type Settings struct {
	CertificateLifetime time.Duration
	// RenewBefore: a leaf is renewed when less than this is left (default a third of
	// CertificateLifetime).
	RenewBefore time.Duration
	CALifetime  time.Duration
	// CARenewBefore: the CA is rotated when less than this is left (default a third of
	// CALifetime).
	CARenewBefore time.Duration
	// CAStepDwell: the least time between the steps of a CA rotation (default
	// DefaultCAStepDwell), counted from the step's write, which is also when the
	// clients' Secret changed. Clients that reread their mounted Secret (the kubelet
	// refreshes Secret volumes about once a minute, plus its sync period) get this long
	// to trust the new CA before members present its certificates, and to take a
	// client certificate of the new CA before the old one is no longer trusted.
	CAStepDwell time.Duration
}

// WithDefaults fills what is unset and clamps what cannot work: a renewal window as
// long as the lifetime would renew at once, forever; a CA shorter than its leaves would
// cut them short.
func (s Settings) WithDefaults() Settings {
	if s.CertificateLifetime <= 0 {
		s.CertificateLifetime = DefaultCertificateLifetime
	}
	if s.CALifetime <= 0 {
		s.CALifetime = DefaultCALifetime
	}
	if s.CAStepDwell <= 0 {
		s.CAStepDwell = DefaultCAStepDwell
	}
	if s.CALifetime < s.CertificateLifetime {
		s.CALifetime = s.CertificateLifetime
	}
	if s.RenewBefore <= 0 || s.RenewBefore >= s.CertificateLifetime {
		s.RenewBefore = s.CertificateLifetime / 3
	}
	if s.CARenewBefore <= 0 || s.CARenewBefore >= s.CALifetime {
		s.CARenewBefore = s.CALifetime / 3
	}
	// A CA rotation rolls members three times; leaves issued while it runs must not
	// outlive the CA that signed them, so it starts at least a leaf lifetime early.
	if s.CARenewBefore < s.CertificateLifetime && s.CertificateLifetime < s.CALifetime {
		s.CARenewBefore = min(s.CertificateLifetime, s.CALifetime-1)
	}
	return s
}

// KeyPair is a certificate and its private key, PEM encoded.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// Names are what a cluster's certificates are valid for.
type Names struct {
	Cluster, Namespace string
	// Domain is the cluster domain ("cluster.local"); "" leaves the domain-qualified
	// names out.
	Domain string
	// ServiceIPs are the client Service's cluster IPs (both families when it has them).
	ServiceIPs []net.IP
}

// SANs are the names a member certificate carries. Member names are covered by a
// wildcard under the cluster's headless Service (<member>.<cluster>.<ns>.svc[.domain]):
// every member, present and future, without a new certificate for each. Server
// certificates also name the client Service (short, namespaced, svc and
// domain-qualified, and its cluster IPs) and localhost; peer certificates only the
// members (and loopback, which etcd dials itself on).
func SANs(kind Kind, n Names) (dns []string, ips []net.IP) {
	suffixes := []string{""}
	if n.Domain != "" {
		suffixes = append(suffixes, "."+n.Domain)
	}
	for _, d := range suffixes {
		dns = append(dns, fmt.Sprintf("*.%s.%s.svc%s", n.Cluster, n.Namespace, d))
	}
	ips = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	if kind != KindServer {
		return dns, ips
	}
	svc := n.Cluster + "-client"
	dns = append(dns, svc, svc+"."+n.Namespace)
	for _, d := range suffixes {
		dns = append(dns, fmt.Sprintf("%s.%s.svc%s", svc, n.Namespace, d))
	}
	dns = append(dns, "localhost")
	for _, ip := range n.ServiceIPs {
		if ip != nil && !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}
	return dns, ips
}

// Covers reports which of dns and ips cert does not name ("" and nil: all).
func Covers(cert *x509.Certificate, dns []string, ips []net.IP) (missing []string) {
	for _, d := range dns {
		if !slices.Contains(cert.DNSNames, d) {
			missing = append(missing, d)
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			missing = append(missing, ip.String())
		}
	}
	return missing
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// backdate is how far before now a certificate becomes valid: clocks of the nodes may
// lag the operator's a little.
const backdate = time.Minute

// NewCA makes a self-signed CA valid for lifetime from now.
func NewCA(commonName string, lifetime time.Duration, now time.Time) (KeyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"etcd-operator"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sign CA: %w", err)
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// Issue signs a leaf of kind for cn and the names given, valid for lifetime from now
// but never beyond the CA.
func Issue(ca KeyPair, kind Kind, cn string, dns []string, ips []net.IP, lifetime time.Duration, now time.Time) (KeyPair, error) {
	caCert, caKey, err := parseKeyPair(ca)
	if err != nil {
		return KeyPair{}, fmt.Errorf("CA: %w", err)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate %s key: %w", kind, err)
	}
	sn, err := serial()
	if err != nil {
		return KeyPair{}, err
	}
	var usage []x509.ExtKeyUsage
	switch kind {
	case KindPeer:
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	case KindServer:
		// etcd's gateway and grpc-proxy dial with the server pair too.
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	case KindClient:
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return KeyPair{}, fmt.Errorf("cannot issue a %q certificate", kind)
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"etcd-operator"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sign %s certificate: %w", kind, err)
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

func parseKeyPair(kp KeyPair) (*x509.Certificate, crypto.Signer, error) {
	cert, err := ParseCert(kp.CertPEM)
	if err != nil {
		return nil, nil, err
	}
	b, _ := pem.Decode(kp.KeyPEM)
	if b == nil {
		return nil, nil, errors.New("no PEM private key")
	}
	var key crypto.Signer
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, nil, errors.New("private key cannot sign")
		}
		key = s
	} else {
		return nil, nil, errors.New("private key does not parse")
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, nil, errors.New("private key does not match the certificate")
	}
	return cert, key, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// ParseCert parses the first certificate of a PEM chain.
func ParseCert(pemBytes []byte) (*x509.Certificate, error) {
	certs, err := ParseBundle(pemBytes)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ParseBundle parses every certificate of a PEM bundle; it fails on a bundle without
// one, or with a block that does not parse.
func ParseBundle(pemBytes []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate does not parse: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

// MergeBundle is the certificates of the bundles given, each once (by its bytes), in
// the order first seen: what members trust while two CAs are in use.
func MergeBundle(bundles ...[]byte) ([]byte, error) {
	var out bytes.Buffer
	var seen [][]byte
	for _, b := range bundles {
		certs, err := ParseBundle(b)
		if err != nil {
			return nil, err
		}
		for _, c := range certs {
			if slices.ContainsFunc(seen, func(s []byte) bool { return bytes.Equal(s, c.Raw) }) {
				continue
			}
			seen = append(seen, c.Raw)
			out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
		}
	}
	return out.Bytes(), nil
}

// SameBundle reports whether two PEM bundles hold the same certificates (in any order).
func SameBundle(a, b []byte) bool {
	ca, err1 := ParseBundle(a)
	cb, err2 := ParseBundle(b)
	if err1 != nil || err2 != nil || len(ca) != len(cb) {
		return false
	}
	for _, x := range ca {
		if !slices.ContainsFunc(cb, func(y *x509.Certificate) bool { return bytes.Equal(x.Raw, y.Raw) }) {
			return false
		}
	}
	return true
}

// Verify checks that leaf is signed by a CA of bundle for the usages of kind, at now.
func Verify(kind Kind, leaf *x509.Certificate, bundle []byte, now time.Time) error {
	return verifyWith(kind, leaf, nil, bundle, now)
}

// VerifyChain is Verify for a PEM chain as a tls.crt holds it: the leaf first, then the
// intermediates that lead to a CA of bundle (an issuer whose CA is an intermediate writes
// them there, and ca.crt holds the root). etcd presents the whole chain.
func VerifyChain(kind Kind, chainPEM, bundle []byte, now time.Time) error {
	certs, err := ParseBundle(chainPEM)
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	return verifyWith(kind, certs[0], inter, bundle, now)
}

func verifyWith(kind Kind, leaf *x509.Certificate, inter *x509.CertPool, bundle []byte, now time.Time) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return errors.New("CA bundle holds no certificate")
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if kind == KindClient {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: usage})
	return err
}
