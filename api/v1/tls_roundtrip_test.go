package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// tlsRoundTrip converts a v1 cluster with spec.tls tls to v1beta2 and back, fails the
// test unless the way back gives tls unchanged, and returns the v1beta2 spec.TLS.
func tlsRoundTrip(t *testing.T, tls *TLSPolicy) *v1beta2.TLSPolicy {
	t.Helper()
	src := &EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: EtcdClusterSpec{Size: 3, TLS: tls}}
	var hub v1beta2.EtcdCluster
	if err := src.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	var back EtcdCluster
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(back.Spec.TLS, src.Spec.TLS) {
		t.Errorf("round trip: %+v -> %+v", src.Spec.TLS.Issuer, back.Spec.TLS.Issuer)
	}
	return hub.Spec.TLS
}
