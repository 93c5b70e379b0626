package webhookcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Validity periods. The CA lives long so that renewing the serving certificate (yearly)
// never changes the caBundle the API server trusts; replicas that have not yet reloaded
// the renewed certificate keep being trusted.
const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	// RenewBefore is how long before expiry a certificate (CA or serving) is replaced.
	RenewBefore = 30 * 24 * time.Hour
	// backdate tolerates clocks of the API server and the operator disagreeing a little.
	backdate = time.Hour
)

// Secret keys. tls.crt and tls.key make the Secret a valid kubernetes.io/tls Secret;
// ca.crt is what is injected as caBundle and may hold, after a CA rotation, the new CA
// followed by the previous one; ca.key is the key of the first certificate in ca.crt.
const (
	KeyCACert = "ca.crt"
	KeyCAKey  = "ca.key"
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
)

// Bundle is the PEM material kept in the Secret.
type Bundle struct {
	CACert, CAKey, Cert, Key []byte
}

// Data returns the Bundle as Secret data.
func (b *Bundle) Data() map[string][]byte {
	return map[string][]byte{KeyCACert: b.CACert, KeyCAKey: b.CAKey, KeyCert: b.Cert, KeyKey: b.Key}
}

// BundleFromData reads Secret data; missing keys stay empty (and are then renewed).
func BundleFromData(d map[string][]byte) *Bundle {
	return &Bundle{CACert: d[KeyCACert], CAKey: d[KeyCAKey], Cert: d[KeyCert], Key: d[KeyKey]}
}

// DNSNames are the names the API server may use for the webhook Service: it dials
// <service>.<namespace>.svc; the others cover clients inside the cluster.
func DNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// Plan is what a Bundle needs.
type Plan int

const (
	// Keep: the CA and serving certificate are valid for long enough and for the names.
	Keep Plan = iota
	// RenewServing: issue a new serving certificate from the existing CA (caBundle unchanged).
	RenewServing
	// RenewAll: issue a new CA and serving certificate (caBundle changes).
	RenewAll
)

func (p Plan) String() string {
	switch p {
	case Keep:
		return "keep"
	case RenewServing:
		return "renew serving certificate"
	default:
		return "renew CA and serving certificate"
	}
}

// Decide tells what b needs at time now to serve the given DNS names, and why (the
// reason is safe to log: it never contains key material).
func Decide(b *Bundle, names []string, now time.Time) (Plan, string) {
	ca, _, err := parseCA(b)
	if err != nil {
		return RenewAll, err.Error()
	}
	if left := ca.NotAfter.Sub(now); left < RenewBefore {
		return RenewAll, fmt.Sprintf("CA expires at %s", ca.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(ca.NotBefore) {
		return RenewAll, "CA is not yet valid"
	}
	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		return RenewServing, "serving certificate and key unusable: " + err.Error()
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return RenewServing, "serving certificate unparseable: " + err.Error()
	}
	if left := cert.NotAfter.Sub(now); left < RenewBefore {
		return RenewServing, fmt.Sprintf("serving certificate expires at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if !sameNames(cert.DNSNames, names) {
		return RenewServing, fmt.Sprintf("serving certificate names %v, want %v", cert.DNSNames, names)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{
		Roots: roots, DNSName: names[0], CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return RenewServing, "serving certificate not valid under the CA: " + err.Error()
	}
	return Keep, "valid"
}

// Renew returns a Bundle that Decide accepts: for Keep, b itself; for RenewServing, a
// new serving certificate from b's CA; for RenewAll, a new CA whose ca.crt also carries
// b's previous CA while that is still valid, so that a replica still serving the old
// certificate stays trusted until it reloads.
func Renew(b *Bundle, plan Plan, names []string, now time.Time) (*Bundle, error) {
	switch plan {
	case Keep:
		return b, nil
	case RenewServing:
		ca, caKey, err := parseCA(b)
		if err != nil {
			return nil, err
		}
		cert, key, err := issueServing(ca, caKey, names, now)
		if err != nil {
			return nil, err
		}
		return &Bundle{CACert: b.CACert, CAKey: b.CAKey, Cert: cert, Key: key}, nil
	}
	ca, caKey, caPEM, caKeyPEM, err := issueCA(now)
	if err != nil {
		return nil, err
	}
	if old, _, err := parseCA(b); err == nil && now.Before(old.NotAfter) {
		caPEM = append(caPEM, pemCert(old.Raw)...)
	}
	cert, key, err := issueServing(ca, caKey, names, now)
	if err != nil {
		return nil, err
	}
	return &Bundle{CACert: caPEM, CAKey: caKeyPEM, Cert: cert, Key: key}, nil
}

// parseCA returns the signing CA (the first certificate of ca.crt) and its key.
func parseCA(b *Bundle) (*x509.Certificate, crypto.Signer, error) {
	if len(b.CACert) == 0 || len(b.CAKey) == 0 {
		return nil, nil, errors.New("no CA")
	}
	block, _ := pem.Decode(b.CACert)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, errors.New("CA certificate is not PEM")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate unparseable: %w", err)
	}
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, nil, errors.New("CA certificate cannot sign certificates")
	}
	// tls.X509KeyPair checks that the key belongs to the certificate.
	pair, err := tls.X509KeyPair(pemCert(ca.Raw), b.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key unusable: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("CA key cannot sign")
	}
	return ca, signer, nil
}

func issueCA(now time.Time) (*x509.Certificate, crypto.Signer, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The serial in the name keeps successive CAs distinguishable (issuer matching).
		Subject:               pkix.Name{CommonName: "etcd-operator webhook CA " + serial.Text(16)[:8]},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	keyPEM, err := pemKey(key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return ca, key, pemCert(der), keyPEM, nil
}

func issueServing(ca *x509.Certificate, caKey crypto.Signer, names []string, now time.Time) ([]byte, []byte, error) {
	if len(names) == 0 {
		return nil, nil, errors.New("no DNS names for the serving certificate")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(servingValidity)
	// A certificate outliving its CA would be rejected before its own expiry.
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     slices.Clone(names),
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := pemKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), keyPEM, nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
