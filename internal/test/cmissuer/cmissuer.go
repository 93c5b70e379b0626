// Package cmissuer is a small stand-in for cert-manager's CA issuer, for tests: the
// proxy this project builds from does not serve cert-manager's controller, so the
// operator's cert-manager issuing is proven against this. It fulfils cert-manager
// Certificates (cert-manager.io/v1) whose issuerRef names its Issuer, as cert-manager's
// CA issuer does: the CA is the keypair in the Secret the Issuer's spec.ca.secretName
// names (tls.crt, tls.key); each Certificate gets the Secret spec.secretName with
// tls.crt, tls.key and ca.crt, for its dnsNames, ipAddresses, usages and duration, with a
// new key at each issuance; it is issued again when the Secret is missing or does not
// match the spec, at the renewal time (notAfter - renewBefore, default a third of the
// duration), and when the Issuing condition is True (cmctl renew's way of forcing a
// renewal); status says Ready, notBefore, notAfter, renewalTime and revision.
package cmissuer

import (
	"context"
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
	"net"
	"slices"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Issuer fulfils the Certificates of Namespace that name the Issuer Name.
type Issuer struct {
	C               client.Client
	Namespace, Name string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (i *Issuer) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

// NewCA makes a self-signed CA keypair (PEM), for the Issuer's Secret.
func NewCA(cn string, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(lifetime), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// Install creates (or updates) the Issuer and its CA Secret caSecret with a new CA; called
// again, it rotates the CA (Certificates issued after that are signed by the new one).
func (i *Issuer) Install(ctx context.Context, caSecret string) error {
	cert, key, err := NewCA(fmt.Sprintf("%s test CA %d", i.Name, time.Now().UnixNano()), 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: caSecret, Namespace: i.Namespace}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}
	if err := i.C.Create(ctx, s); apierrors.IsAlreadyExists(err) {
		var cur corev1.Secret
		if err := i.C.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
			return err
		}
		cur.Data = s.Data
		if err := i.C.Update(ctx, &cur); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	is := &cmv1.Issuer{ObjectMeta: metav1.ObjectMeta{Name: i.Name, Namespace: i.Namespace},
		Spec: cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{CA: &cmv1.CAIssuer{SecretName: caSecret}}}}
	if err := i.C.Create(ctx, is); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// ForceRenewal asks for Certificate name to be issued again now, as `cmctl renew`
// does: the Issuing condition set True with reason ManuallyTriggered.
func ForceRenewal(ctx context.Context, c client.Client, namespace, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cert cmv1.Certificate
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cert); err != nil {
			return err
		}
		setCondition(&cert, cmv1.CertificateConditionIssuing, cmmeta.ConditionTrue, "ManuallyTriggered", "Certificate re-issuance manually triggered", time.Now())
		return c.Status().Update(ctx, &cert)
	})
}

// Run fulfils Certificates until ctx ends: at each change of one (a watch) and every
// tick (renewal times pass without a change). Errors go to report (nil: dropped) and
// are retried at the next tick.
func (i *Issuer) Run(ctx context.Context, w client.WithWatch, tick time.Duration, report func(error)) {
	changed := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			wi, err := w.Watch(ctx, &cmv1.CertificateList{}, client.InNamespace(i.Namespace))
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(tick):
				}
				continue
			}
			for range wi.ResultChan() {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			wi.Stop()
		}
	}()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		if _, err := i.Sync(ctx); err != nil && report != nil && ctx.Err() == nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
	}
}

// Sync fulfils every Certificate naming the Issuer once; it returns how many it issued.
func (i *Issuer) Sync(ctx context.Context) (int, error) {
	var is cmv1.Issuer
	if err := i.C.Get(ctx, client.ObjectKey{Namespace: i.Namespace, Name: i.Name}, &is); err != nil {
		return 0, fmt.Errorf("issuer: %w", err)
	}
	if is.Spec.CA == nil {
		return 0, errors.New("issuer has no spec.ca")
	}
	var caSecret corev1.Secret
	if err := i.C.Get(ctx, client.ObjectKey{Namespace: i.Namespace, Name: is.Spec.CA.SecretName}, &caSecret); err != nil {
		return 0, fmt.Errorf("issuer's CA secret: %w", err)
	}
	ca, err := tls.X509KeyPair(caSecret.Data[corev1.TLSCertKey], caSecret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return 0, fmt.Errorf("issuer's CA secret: %w", err)
	}
	var certs cmv1.CertificateList
	if err := i.C.List(ctx, &certs, client.InNamespace(i.Namespace)); err != nil {
		return 0, err
	}
	issued := 0
	var errs []error
	for k := range certs.Items {
		c := &certs.Items[k]
		ref := c.Spec.IssuerRef
		if ref.Name != i.Name || (ref.Kind != "" && ref.Kind != cmv1.IssuerKind) || (ref.Group != "" && ref.Group != "cert-manager.io") {
			continue
		}
		n, err := i.fulfil(ctx, c, ca, caSecret.Data[corev1.TLSCertKey])
		issued += n
		if err != nil {
			errs = append(errs, fmt.Errorf("certificate %s: %w", c.Name, err))
		}
	}
	return issued, errors.Join(errs...)
}

func (i *Issuer) fulfil(ctx context.Context, c *cmv1.Certificate, ca tls.Certificate, caPEM []byte) (int, error) {
	now := i.now()
	var s corev1.Secret
	err := i.C.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.SecretName}, &s)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	exists := err == nil
	why := ""
	switch {
	case !exists:
		why = "no Secret"
	case conditionTrue(c, cmv1.CertificateConditionIssuing):
		why = "issuing asked for"
	default:
		if leaf, perr := parseLeaf(s.Data[corev1.TLSCertKey]); perr != nil {
			why = "Secret holds no certificate"
		} else if !matches(leaf, c) {
			why = "certificate does not match the spec"
		} else if !now.Before(renewalTime(leaf, c)) {
			why = "renewal time"
		}
		// As cert-manager: a new CA in the issuer's Secret is taken up at the next
		// issuance, and does not cause one.
	}
	if why == "" {
		leaf, _ := parseLeaf(s.Data[corev1.TLSCertKey])
		return 0, i.ready(ctx, c, leaf, now, false)
	}
	certPEM, keyPEM, leaf, err := sign(c, ca, now)
	if err != nil {
		return 0, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, cmmeta.TLSCAKey: caPEM}
	if !exists {
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.Spec.SecretName, Namespace: c.Namespace,
			Annotations: map[string]string{cmv1.CertificateNameKey: c.Name, cmv1.IssuerNameAnnotationKey: i.Name}},
			Type: corev1.SecretTypeTLS, Data: data}
		if err := i.C.Create(ctx, &s); err != nil {
			return 0, err
		}
	} else {
		s.Data = data
		if err := i.C.Update(ctx, &s); err != nil {
			return 0, err
		}
	}
	return 1, i.ready(ctx, c, leaf, now, true)
}

// ready writes the Certificate's status for leaf; issued counts a new revision and
// clears Issuing.
func (i *Issuer) ready(ctx context.Context, c *cmv1.Certificate, leaf *x509.Certificate, now time.Time, issued bool) error {
	before := c.Status.DeepCopy()
	nb, na, rt := metav1.NewTime(leaf.NotBefore), metav1.NewTime(leaf.NotAfter), metav1.NewTime(renewalTime(leaf, c))
	c.Status.NotBefore, c.Status.NotAfter, c.Status.RenewalTime = &nb, &na, &rt
	if issued {
		rev := 1
		if c.Status.Revision != nil {
			rev = *c.Status.Revision + 1
		}
		c.Status.Revision = &rev
		kept := c.Status.Conditions[:0]
		for _, cond := range c.Status.Conditions {
			if cond.Type != cmv1.CertificateConditionIssuing {
				kept = append(kept, cond)
			}
		}
		c.Status.Conditions = kept
	}
	setCondition(c, cmv1.CertificateConditionReady, cmmeta.ConditionTrue, "Ready", "Certificate is up to date and has not expired", now)
	if !issued && equalStatus(before, &c.Status) {
		return nil
	}
	return i.C.Status().Update(ctx, c)
}

func equalStatus(a, b *cmv1.CertificateStatus) bool {
	return fmt.Sprint(a.Conditions) == fmt.Sprint(b.Conditions) && a.NotAfter.Equal(b.NotAfter) && a.RenewalTime.Equal(b.RenewalTime)
}

func setCondition(c *cmv1.Certificate, t cmv1.CertificateConditionType, st cmmeta.ConditionStatus, reason, msg string, now time.Time) {
	for k := range c.Status.Conditions {
		cond := &c.Status.Conditions[k]
		if cond.Type == t {
			if cond.Status != st {
				lt := metav1.NewTime(now)
				cond.LastTransitionTime = &lt
			}
			cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration = st, reason, msg, c.Generation
			return
		}
	}
	lt := metav1.NewTime(now)
	c.Status.Conditions = append(c.Status.Conditions, cmv1.CertificateCondition{Type: t, Status: st, Reason: reason,
		Message: msg, LastTransitionTime: &lt, ObservedGeneration: c.Generation})
}

func conditionTrue(c *cmv1.Certificate, t cmv1.CertificateConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == cmmeta.ConditionTrue
		}
	}
	return false
}

func duration(c *cmv1.Certificate) time.Duration {
	if c.Spec.Duration != nil {
		return c.Spec.Duration.Duration
	}
	return 90 * 24 * time.Hour // cert-manager's default
}

func renewalTime(leaf *x509.Certificate, c *cmv1.Certificate) time.Time {
	before := leaf.NotAfter.Sub(leaf.NotBefore) / 3 // cert-manager's default
	if c.Spec.RenewBefore != nil {
		before = c.Spec.RenewBefore.Duration
	}
	return leaf.NotAfter.Add(-before)
}

// matches: the certificate carries exactly the spec's names and common name.
func matches(leaf *x509.Certificate, c *cmv1.Certificate) bool {
	if leaf.Subject.CommonName != c.Spec.CommonName {
		return false
	}
	dns := slices.Clone(leaf.DNSNames)
	want := slices.Clone(c.Spec.DNSNames)
	slices.Sort(dns)
	slices.Sort(want)
	if !slices.Equal(dns, want) || len(leaf.IPAddresses) != len(c.Spec.IPAddresses) {
		return false
	}
	for _, s := range c.Spec.IPAddresses {
		if !slices.ContainsFunc(leaf.IPAddresses, net.ParseIP(s).Equal) {
			return false
		}
	}
	return true
}

func sign(c *cmv1.Certificate, ca tls.Certificate, now time.Time) (certPEM, keyPEM []byte, leaf *x509.Certificate, err error) {
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // a new key at each issuance
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: c.Spec.CommonName},
		NotBefore: now.Add(-time.Minute).Truncate(time.Second), DNSNames: c.Spec.DNSNames}
	tmpl.NotAfter = tmpl.NotBefore.Add(duration(c))
	if tmpl.NotAfter.After(caCert.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	for _, s := range c.Spec.IPAddresses {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, nil, nil, fmt.Errorf("ipAddresses: %q is not an IP", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	usages := c.Spec.Usages
	if len(usages) == 0 {
		usages = []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment} // cert-manager's default
	}
	for _, u := range usages {
		switch u {
		case cmv1.UsageDigitalSignature:
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case cmv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case cmv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		case cmv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		default:
			return nil, nil, nil, fmt.Errorf("usage %q is not one this test issuer signs", u)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	leaf, err = x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), leaf, nil
}

func parseLeaf(p []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(p)
	if b == nil {
		return nil, errors.New("no PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
