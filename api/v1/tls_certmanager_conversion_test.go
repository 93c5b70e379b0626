package v1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spec.tls.issuer.issuerRef (with the issuer's durations) and v1beta2's
// spec.TLS.certManager convert into each other field for field, and back unchanged.
func TestIssuerRefRoundTrip(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, i := range []*TLSIssuer{
		{IssuerRef: &CertManagerIssuerRef{Name: "ca"}},
		{IssuerRef: &CertManagerIssuerRef{Name: "corp", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			CertificateLifetime: d(48 * time.Hour), RenewBefore: d(12 * time.Hour)},
	} {
		tls := tlsRoundTrip(t, &TLSPolicy{Issuer: i})
		cm := tls.CertManager
		if cm == nil || tls.Auto != nil || tls.Static != nil {
			t.Fatalf("v1beta2 TLS %+v", tls)
		}
		if cm.IssuerRef.Name != i.IssuerRef.Name || cm.IssuerRef.Kind != i.IssuerRef.Kind || cm.IssuerRef.Group != i.IssuerRef.Group ||
			!equality.Semantic.DeepEqual(cm.CertificateLifetime, i.CertificateLifetime) || !equality.Semantic.DeepEqual(cm.RenewBefore, i.RenewBefore) {
			t.Errorf("certManager %+v from issuer %+v", cm, i)
		}
	}
}
