package v1

import (
	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.tls.issuer.issuerRef (with the issuer's certificateLifetime and renewBefore) is
// v1beta2's spec.TLS.certManager, field for field.
func issuerToCertManager(i *TLSIssuer) *v1beta2.CertManagerTLS {
	if i == nil || i.IssuerRef == nil {
		return nil
	}
	r := i.IssuerRef
	return &v1beta2.CertManagerTLS{IssuerRef: v1beta2.CertManagerIssuerRef{Name: r.Name, Kind: r.Kind, Group: r.Group},
		CertificateLifetime: i.CertificateLifetime, RenewBefore: i.RenewBefore}
}

// tlsIssuerFrom is v1's issuer of v1beta2's auto or certManager (admission lets at most
// one be set; were both, built-in issuing's fields and the issuerRef would both be
// carried, as the object said).
func tlsIssuerFrom(a *v1beta2.AutoTLS, cm *v1beta2.CertManagerTLS) *TLSIssuer {
	i := autoToIssuer(a)
	if cm == nil {
		return i
	}
	if i == nil {
		i = &TLSIssuer{}
	}
	r := cm.IssuerRef
	i.IssuerRef = &CertManagerIssuerRef{Name: r.Name, Kind: r.Kind, Group: r.Group}
	i.CertificateLifetime, i.RenewBefore = cm.CertificateLifetime, cm.RenewBefore
	return i
}
