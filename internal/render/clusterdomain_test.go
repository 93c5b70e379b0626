package render

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A cluster domain that is not a DNS name would put a user, port or fragment into the
// member hosts the operator dials ("x@10.0.0.1:443#" makes https://m.c.ns.svc.x@...
// dial 10.0.0.1:443): refused, naming the field, before anything is rendered.
func TestClusterDomainMustBeADNSName(t *testing.T) {
	cluster := func(d string) *v1beta2.EtcdCluster {
		return &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: v1beta2.EtcdClusterSpec{Size: 3, Pod: &v1beta2.PodPolicy{ClusterDomain: d}}}
	}
	for _, bad := range []string{"x@10.0.0.1:443#", "cluster.local:6443", "evil/path", "a#b", "Cluster.Local", " cluster.local", "a..b", "-a.b", "..a"} {
		err := ValidateCluster(cluster(bad))
		if err == nil || !strings.Contains(err.Error(), "spec.pod.ClusterDomain") {
			t.Errorf("%q: %v, want a refusal naming spec.pod.ClusterDomain", bad, err)
		}
	}
	for _, ok := range []string{"", "cluster.local", "cluster.local.", ".cluster.local", "k8s-1.example.com"} {
		if err := ValidateCluster(cluster(ok)); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}
