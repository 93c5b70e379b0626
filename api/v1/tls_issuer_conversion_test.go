package v1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.tls.issuer.builtin and v1beta2's spec.TLS.auto convert into each other, with
// and without durations, and back unchanged.
func TestBuiltinIssuerRoundTrip(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, b := range []*BuiltinIssuer{
		{},
		{CertificateLifetime: d(10 * time.Minute), RenewBefore: d(4 * time.Minute), CALifetime: d(time.Hour), CARenewBefore: d(20 * time.Minute), CAStepDwell: d(10 * time.Second)},
	} {
		src := &EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
			Spec: EtcdClusterSpec{Size: 3, TLS: &TLSPolicy{Issuer: &TLSIssuer{Builtin: b}}}}
		var hub v1beta2.EtcdCluster
		if err := src.ConvertTo(&hub); err != nil {
			t.Fatal(err)
		}
		a := hub.Spec.TLS.Auto
		if a == nil || hub.Spec.TLS.Static != nil {
			t.Fatalf("v1beta2 TLS %+v", hub.Spec.TLS)
		}
		if !equality.Semantic.DeepEqual(a.CertificateLifetime, b.CertificateLifetime) || !equality.Semantic.DeepEqual(a.CARenewBefore, b.CARenewBefore) || !equality.Semantic.DeepEqual(a.CAStepDwell, b.CAStepDwell) {
			t.Errorf("auto %+v from builtin %+v", a, b)
		}
		var back EtcdCluster
		if err := back.ConvertFrom(&hub); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(back.Spec.TLS, src.Spec.TLS) {
			t.Errorf("round trip: %+v -> %+v", src.Spec.TLS.Issuer.Builtin, back.Spec.TLS)
		}
	}
}
