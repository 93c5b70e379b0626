// Package certmanager is the pure part of cert-manager issuing (spec.tls.issuer.issuerRef;
// v1beta2 spec.TLS.certManager): the Certificates a cluster asks cert-manager for, the
// reading of the Secrets cert-manager writes, and the plan that moves the cluster from
// the certificates in effect to the ones cert-manager wrote, a generation at a time,
// with a new CA trusted beside the old one before any member presents a certificate it
// signed. The controller (controllers/etcdcluster/act_tls_certmanager.go) reads and
// writes the objects; nothing here talks to the API server.
package certmanager

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/certissue"
)

// Kinds are the three certificates a cluster has, in the order they are handled.
var Kinds = []certissue.Kind{certissue.KindPeer, certissue.KindServer, certissue.KindClient}

// CertificateName is the name of the Certificate of kind made for cluster, and of the
// Secret it has cert-manager write.
func CertificateName(cluster string, kind certissue.Kind) string {
	return cluster + "-cm-" + string(kind)
}

// ClientSecretName is the Secret the clients of a cluster with cert-manager issuing
// mount (keys etcd-client.crt, etcd-client.key, etcd-client-ca.crt): the operator keeps
// it on the generation in effect, so its CA bundle holds a new CA a whole roll-out before
// any member presents a certificate that CA signed.
func ClientSecretName(cluster string) string { return cluster + "-cm-tls-client" }

// StateSecretName is the Secret that records the generation in effect.
func StateSecretName(cluster string) string { return cluster + "-cm-tls-state" }

// GenerationSecrets are the names of a generation's peer, server and client Secrets,
// copies of what cert-manager wrote (and the trust bundle of the step), written once.
func GenerationSecrets(cluster string, gen int) (peer, server, client string) {
	p := fmt.Sprintf("%s-cm-tls-%d-", cluster, gen)
	return p + "peer", p + "server", p + "client"
}

// CAStepDwell is the least time each step of a CA change waits after the step before
// (new CA trusted, then presented): the time clients get to reread
// ClientSecretName (the kubelet refreshes mounted Secrets about once a minute, plus its
// sync period). A renewal by the same CA waits for nothing but the members.
const CAStepDwell = 5 * time.Minute

// Ref is the issuer and the durations the Certificates ask for.
type Ref struct {
	Name, Kind, Group     string
	Duration, RenewBefore time.Duration
}

// Spec is the spec of the Certificate of kind for a cluster with names n: the names a
// member certificate needs (certissue.SANs: every member by wildcard, the client
// Service by every name and cluster IP, both families, loopback), the usages etcd checks,
// a new ECDSA key at each issuance, written to the Secret of the Certificate's name.
func Spec(kind certissue.Kind, n certissue.Names, ref Ref) cmv1.CertificateSpec {
	s := cmv1.CertificateSpec{
		SecretName: CertificateName(n.Cluster, kind),
		CommonName: fmt.Sprintf("%s %s", n.Cluster, kind),
		IssuerRef:  cmmeta.IssuerReference{Name: ref.Name, Kind: ref.Kind, Group: ref.Group},
		PrivateKey: &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256,
			RotationPolicy: cmv1.RotationPolicyAlways},
		Usages: []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment, cmv1.UsageClientAuth},
	}
	if s.IssuerRef.Kind == "" {
		s.IssuerRef.Kind = cmv1.IssuerKind
	}
	if s.IssuerRef.Group == "" {
		s.IssuerRef.Group = "cert-manager.io"
	}
	if kind != certissue.KindClient {
		s.Usages = append(s.Usages, cmv1.UsageServerAuth)
		dns, ips := certissue.SANs(kind, n)
		s.DNSNames = dns
		for _, ip := range ips {
			s.IPAddresses = append(s.IPAddresses, ip.String())
		}
	}
	if ref.Duration > 0 {
		s.Duration = &metav1.Duration{Duration: ref.Duration}
	}
	if ref.RenewBefore > 0 {
		s.RenewBefore = &metav1.Duration{Duration: ref.RenewBefore}
	}
	return s
}

// Keys of the Secrets cert-manager writes.
const (
	TLSCertKey = "tls.crt"
	TLSKeyKey  = "tls.key"
	CAKey      = "ca.crt"
)

// NotReady says why a Certificate has nothing usable yet.
type NotReady struct {
	Certificate string
	Why         string
}

func (e *NotReady) Error() string { return fmt.Sprintf("Certificate %q: %s", e.Certificate, e.Why) }

// Ready reports whether cert says it is Ready for its current spec: nil, or why not
// (cert-manager's Ready condition's reason and message, quoted).
func Ready(cert *cmv1.Certificate) error {
	for _, c := range cert.Status.Conditions {
		if c.Type != cmv1.CertificateConditionReady {
			continue
		}
		switch {
		case c.Status != cmmeta.ConditionTrue:
			return &NotReady{cert.Name, fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, bounded(c.Message))}
		case c.ObservedGeneration != cert.Generation:
			return &NotReady{cert.Name, "Ready is for an earlier spec; waiting for cert-manager to issue for this one"}
		}
		return nil
	}
	return &NotReady{cert.Name, "no Ready condition yet; is cert-manager running, and does its issuer exist?"}
}

// bounded cuts a message an issuer (or a tenant's Certificate) wrote to a size fit
// for a condition.
func bounded(s string) string {
	const max = 256
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// Read checks the Secret cert-manager wrote for the Certificate of kind: a certificate
// with its private key, signed (for kind's usage) by a CA of ca.crt, valid at now, naming
// n's names. It returns the pair and the CA bundle.
func Read(certificate string, kind certissue.Kind, data map[string][]byte, n certissue.Names, now time.Time) (certissue.KeyPair, []byte, error) {
	kp := certissue.KeyPair{CertPEM: data[TLSCertKey], KeyPEM: data[TLSKeyKey]}
	bundle := data[CAKey]
	bad := func(why string) (certissue.KeyPair, []byte, error) {
		return certissue.KeyPair{}, nil, &NotReady{certificate, fmt.Sprintf("Secret %q: %s", certificate, why)}
	}
	if len(kp.CertPEM) == 0 || len(kp.KeyPEM) == 0 || len(bundle) == 0 {
		return bad("has no " + TLSCertKey + ", " + TLSKeyKey + " and " + CAKey + " yet")
	}
	if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
		return bad("certificate and key do not pair: " + err.Error())
	}
	leaf, err := certissue.ParseCert(kp.CertPEM)
	if err != nil {
		return bad(err.Error())
	}
	if _, err := certissue.ParseBundle(bundle); err != nil {
		return bad(CAKey + ": " + err.Error())
	}
	if err := certissue.VerifyChain(kind, kp.CertPEM, bundle, now); err != nil {
		return bad("certificate does not verify against " + CAKey + ": " + err.Error())
	}
	if kind != certissue.KindClient {
		dns, ips := certissue.SANs(kind, n)
		if missing := certissue.Covers(leaf, dns, ips); len(missing) > 0 {
			return bad(fmt.Sprintf("certificate does not name %v", missing))
		}
	}
	return kp, bundle, nil
}

// Step is what Decide asks for.
type Step string

const (
	// Keep: nothing to do (or nothing yet).
	Keep Step = ""
	// First: the first generation, what cert-manager wrote.
	First Step = "first"
	// Renew: cert-manager's new certificates, signed by a CA already trusted alone.
	Renew Step = "renew"
	// TrustNewCA: the certificates in effect, with the new CA trusted beside the old.
	TrustNewCA Step = "trust-new-ca"
	// SwitchToNewCA: cert-manager's certificates of the new CA; both still trusted.
	SwitchToNewCA Step = "switch-to-new-ca"
	// DropOldCA: the certificates in effect, trusting cert-manager's CA alone.
	DropOldCA Step = "drop-old-ca"
)

// Decision is Decide's answer: the next generation's contents (for a Step other than
// Keep), why, and when to look again if waiting on time.
type Decision struct {
	Step   Step
	Next   certissue.Leaves
	Reason string
	Wait   time.Duration
}

// Decide plans the move from cur (the generation in effect, nil when there is none;
// since: when it took effect) to in (what cert-manager wrote; Trust is the merged CA
// bundle of the three Secrets). A generation moves only when every member runs the one
// in effect (rolledOut). A CA change takes three: the new CA trusted beside the old,
// then cert-manager's certificates, then the old CA dropped, each after the dwell, so
// no member or client ever meets a certificate its bundle does not hold.
func Decide(cur *certissue.Leaves, since time.Time, in certissue.Leaves, rolledOut bool, now time.Time, dwell time.Duration) Decision {
	if cur == nil {
		return Decision{Step: First, Next: in, Reason: "cert-manager issued the cluster's certificates"}
	}
	sameLeaves := sameLeaves(*cur, in)
	sameTrust := certissue.SameBundle(cur.Trust, in.Trust)
	if sameLeaves && sameTrust {
		return Decision{}
	}
	if !rolledOut {
		return Decision{Reason: "waiting for every member to run the generation in effect"}
	}
	newCAs, err := missingFrom(cur.Trust, in.Trust)
	if err != nil {
		return Decision{Reason: err.Error()}
	}
	if newCAs {
		both, err := certissue.MergeBundle(cur.Trust, in.Trust)
		if err != nil {
			return Decision{Reason: err.Error()}
		}
		return Decision{Step: TrustNewCA, Next: certissue.Leaves{Peer: cur.Peer, Server: cur.Server, Client: cur.Client, Trust: both},
			Reason: "cert-manager's certificates are signed by a CA the members do not trust yet: trusting it beside the old one first"}
	}
	if sameTrust && !issuersChanged(*cur, in) {
		// Renewed by the CA in effect: nobody needs to learn a CA.
		return Decision{Step: Renew, Next: certissue.Leaves{Peer: in.Peer, Server: in.Server, Client: in.Client, Trust: cur.Trust},
			Reason: "cert-manager renewed the certificates"}
	}
	// The bundle in effect holds cert-manager's CA and an old one (or cert-manager's
	// Secrets name both because some Certificates are on the new CA and some still on the
	// old): a CA change under way, so whatever presents a certificate of another CA waits
	// the dwell after the bundle holding it rolled out.
	if left := dwell - now.Sub(since); left > 0 {
		return Decision{Reason: fmt.Sprintf("CA change: waiting %v more for clients to reread %s", left.Round(time.Second), "their Secret"), Wait: left}
	}
	if !sameLeaves {
		return Decision{Step: SwitchToNewCA, Next: certissue.Leaves{Peer: in.Peer, Server: in.Server, Client: in.Client, Trust: cur.Trust},
			Reason: "presenting the certificates of the new CA, both CAs still trusted"}
	}
	return Decision{Step: DropOldCA, Next: certissue.Leaves{Peer: cur.Peer, Server: cur.Server, Client: cur.Client, Trust: in.Trust},
		Reason: "every member presents the new CA's certificates: dropping the old CA"}
}

// issuersChanged reports whether a certificate of in was signed by another CA than the
// one of cur it replaces: presenting it needs the dwell that lets clients reread the
// bundle trusting that CA, even when the bundle in effect already holds it (cert-manager
// renewed some Certificates under a new CA and some not yet, so the merged bundle of
// what it wrote was trusted as a whole before a single certificate moved).
func issuersChanged(cur, in certissue.Leaves) bool {
	for _, x := range [][2][]byte{{cur.Peer.CertPEM, in.Peer.CertPEM}, {cur.Server.CertPEM, in.Server.CertPEM}, {cur.Client.CertPEM, in.Client.CertPEM}} {
		a, errA := certissue.ParseCert(x[0])
		b, errB := certissue.ParseCert(x[1])
		if errA != nil || errB != nil {
			return true // unreadable: take the careful path
		}
		if !bytes.Equal(a.RawIssuer, b.RawIssuer) || !bytes.Equal(a.AuthorityKeyId, b.AuthorityKeyId) {
			return true
		}
	}
	return false
}

// Same reports whether a and b hold the same certificates, keys and CA bundle.
func Same(a, b certissue.Leaves) bool {
	return sameLeaves(a, b) && certissue.SameBundle(a.Trust, b.Trust)
}

func sameLeaves(a, b certissue.Leaves) bool {
	eq := func(x, y certissue.KeyPair) bool {
		return bytes.Equal(x.CertPEM, y.CertPEM) && bytes.Equal(x.KeyPEM, y.KeyPEM)
	}
	return eq(a.Peer, b.Peer) && eq(a.Server, b.Server) && eq(a.Client, b.Client)
}

// missingFrom reports whether want holds a certificate have does not.
func missingFrom(have, want []byte) (bool, error) {
	merged, err := certissue.MergeBundle(have, want)
	if err != nil {
		return false, errors.New("CA bundle: " + err.Error())
	}
	return !certissue.SameBundle(merged, have), nil
}

// Issuing reports whether cert-manager is issuing cert anew (its Issuing condition).
func Issuing(cert *cmv1.Certificate) bool {
	for _, c := range cert.Status.Conditions {
		if c.Type == cmv1.CertificateConditionIssuing {
			return c.Status == cmmeta.ConditionTrue
		}
	}
	return false
}
