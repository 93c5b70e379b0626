package v1

import (
	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.tls.issuer.builtin is v1beta2's spec.TLS.auto, field for field. An issuer
// naming none (which admission refuses) has no v1beta2 form.
func issuerToAuto(i *TLSIssuer) *v1beta2.AutoTLS {
	if i == nil || i.Builtin == nil {
		return nil
	}
	b := i.Builtin
	return &v1beta2.AutoTLS{CertificateLifetime: b.CertificateLifetime, RenewBefore: b.RenewBefore,
		CALifetime: b.CALifetime, CARenewBefore: b.CARenewBefore, CAStepDwell: b.CAStepDwell}
}

func autoToIssuer(a *v1beta2.AutoTLS) *TLSIssuer {
	if a == nil {
		return nil
	}
	return &TLSIssuer{Builtin: &BuiltinIssuer{CertificateLifetime: a.CertificateLifetime, RenewBefore: a.RenewBefore,
		CALifetime: a.CALifetime, CARenewBefore: a.CARenewBefore, CAStepDwell: a.CAStepDwell}}
}
