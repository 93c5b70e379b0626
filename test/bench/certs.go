package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the bench's throwaway PKI, written as PEM files under dir.
type pki struct {
	CACert, CAKey           string // cluster CA (also the client CA and the signing CA for kcm)
	ServingCert, ServingKey string // kube-apiserver serving pair
	AdminCert, AdminKey     string // client cert in system:masters
	SAKey, SAPub            string // service-account token signing pair (RSA: widest support)

	caPEM, adminCertPEM, adminKeyPEM []byte
}

// newPKI generates every key and certificate the control plane needs. ECDSA P-256 keeps
// generation in the milliseconds; only the service-account key is RSA.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock skew between processes
	notAfter := now.Add(10 * 365 * 24 * time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "etcd-operator-bench-ca"},
		NotBefore:             now,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caPEM = pemBlock("CERTIFICATE", caDER)
	if err := writeCertKey(p.CACert, p.CAKey, caDER, caKey); err != nil {
		return nil, err
	}

	issue := func(certPath, keyPath string, tmpl *x509.Certificate) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore, tmpl.NotAfter = now, notAfter
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		if err := writeCertKey(certPath, keyPath, der, key); err != nil {
			return nil, nil, err
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", kder), nil
	}

	// The serving cert must be valid for every name a client may use: loopback for the
	// test process and the host-side proxy of the bench command, the bench network
	// address for the nodes, and the kubernetes Service's name and ClusterIP for pods.
	if _, _, err := issue(p.ServingCert, p.ServingKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(serviceCIDRFirstIP), net.ParseIP(controlPlaneIP),
			net.ParseIP(serviceCIDR6FirstIP), net.ParseIP(controlPlaneIP6)},
	}); err != nil {
		return nil, err
	}
	if p.adminCertPEM, p.adminKeyPEM, err = issue(p.AdminCert, p.AdminKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "bench-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAKey, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)), 0o600); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAPub, pemBlock("PUBLIC KEY", pub), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeCertKey(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	if err := os.WriteFile(certPath, pemBlock("CERTIFICATE", der), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pemBlock("EC PRIVATE KEY", kder), 0o600)
}
