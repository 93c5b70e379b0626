package v1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spec.tls.issuer.builtin and v1beta2's spec.TLS.auto convert into each other, with
// and without durations, and back unchanged.
func TestBuiltinIssuerRoundTrip(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, b := range []*BuiltinIssuer{
		{},
		{CertificateLifetime: d(10 * time.Minute), RenewBefore: d(4 * time.Minute), CALifetime: d(time.Hour), CARenewBefore: d(20 * time.Minute), CAStepDwell: d(10 * time.Second)},
	} {
		tls := tlsRoundTrip(t, &TLSPolicy{Issuer: &TLSIssuer{Builtin: b}})
		a := tls.Auto
		if a == nil || tls.Static != nil {
			t.Fatalf("v1beta2 TLS %+v", tls)
		}
		if !equality.Semantic.DeepEqual(a.CertificateLifetime, b.CertificateLifetime) || !equality.Semantic.DeepEqual(a.CARenewBefore, b.CARenewBefore) || !equality.Semantic.DeepEqual(a.CAStepDwell, b.CAStepDwell) {
			t.Errorf("auto %+v from builtin %+v", a, b)
		}
	}
}
