// Package tlsproof proves, before any member restarts, that a rotation of a running
// cluster's TLS Secrets keeps every connection working at every point of the rollout.
//
// During a rotation members run on the old Secret and on the new one side by side, and
// the operator keeps dialling all of them. Every pair must trust each other both ways:
// a member on the new Secret presents its new certificate to members that still trust
// only the old CA bundle, and verifies their old certificates against its new bundle.
// So the new certificate must verify against every CA bundle in use, and every
// certificate in use against the new bundle (a CA change needs a bundle holding both
// CAs). The same holds between the operator's client certificate and the members'
// server certificates.
//
// Everything here is pure: the controller reads the Secrets and hands their bytes in.
// Errors name Secrets and keys, never contents.
package tlsproof

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Pair is one Secret's certificate (a PEM chain, leaf first) and the CA bundle it
// trusts, with the keys they were read from, for messages.
type Pair struct {
	Secret         string
	CertKey, CAKey string
	Cert, CA       []byte
}

// Role is how a certificate is used, which decides the extended key usages it needs.
type Role int

const (
	// Peer certificates are presented both ways between members.
	Peer Role = iota
	// Server certificates are presented to clients.
	Server
	// Client certificates (the operator's) are presented to members.
	Client
)

func (r Role) usages() [][]x509.ExtKeyUsage {
	switch r {
	case Peer:
		return [][]x509.ExtKeyUsage{{x509.ExtKeyUsageServerAuth}, {x509.ExtKeyUsageClientAuth}}
	case Server:
		return [][]x509.ExtKeyUsage{{x509.ExtKeyUsageServerAuth}}
	}
	return [][]x509.ExtKeyUsage{{x509.ExtKeyUsageClientAuth}}
}

// Rotation proves that members can move from the Secrets in running to next one at a
// time: next's certificate names every host, and verifies against its own bundle and
// every running bundle; every running certificate verifies against next's bundle.
func Rotation(role Role, running []Pair, next Pair, hosts []string, now time.Time) error {
	if err := verify(role, next, next, now); err != nil {
		return err
	}
	leaf, _, err := parseChain(next)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			return fmt.Errorf("secret %q (%s) is not valid for member host %s", next.Secret, next.CertKey, h)
		}
	}
	for _, r := range running {
		if r.Secret == next.Secret {
			continue
		}
		if err := verify(role, next, r, now); err != nil {
			return err
		}
		if err := verify(role, r, next, now); err != nil {
			return err
		}
	}
	return nil
}

// Operator proves that the operator's client Secret and every server Secret in servers
// trust each other: its certificate verifies against each server bundle, and each
// server certificate against its bundle.
func Operator(op Pair, servers []Pair, now time.Time) error {
	for _, s := range servers {
		if err := verify(Client, op, s, now); err != nil {
			return err
		}
		if err := verify(Server, s, op, now); err != nil {
			return err
		}
	}
	return nil
}

// verify checks that the certificate of from verifies against the bundle of trust, for
// every usage role needs.
func verify(role Role, from, trust Pair, now time.Time) error {
	leaf, inter, err := parseChain(from)
	if err != nil {
		return err
	}
	roots, err := parseBundle(trust)
	if err != nil {
		return err
	}
	for _, u := range role.usages() {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: u, CurrentTime: now})
		if err != nil {
			return fmt.Errorf("secret %q (%s) does not verify against the CA bundle of secret %q (%s): %s",
				from.Secret, from.CertKey, trust.Secret, trust.CAKey, why(err))
		}
	}
	return nil
}

// why is a verification error without certificate contents: the kind of failure.
func why(err error) string {
	var ua x509.UnknownAuthorityError
	var inv x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return "signed by an authority that bundle does not hold"
	case errors.As(err, &inv):
		switch inv.Reason {
		case x509.Expired:
			return "expired or not yet valid"
		case x509.IncompatibleUsage:
			return "its extended key usage does not allow this use"
		}
	}
	return strings.TrimPrefix(err.Error(), "x509: ")
}

func parseChain(p Pair) (*x509.Certificate, *x509.CertPool, error) {
	certs, err := parsePEM(p.Cert)
	if err != nil || len(certs) == 0 {
		return nil, nil, fmt.Errorf("secret %q: %q holds no PEM certificate", p.Secret, p.CertKey)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	return certs[0], inter, nil
}

func parseBundle(p Pair) (*x509.CertPool, error) {
	certs, err := parsePEM(p.CA)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("secret %q: %q holds no PEM certificate", p.Secret, p.CAKey)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func parsePEM(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out, nil
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}
