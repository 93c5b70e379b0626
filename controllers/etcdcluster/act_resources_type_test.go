package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A client Service that reaches outside the Kubernetes cluster is the operator
// administrator's choice, not the tenant's: refused unless --client-service-types names it.
func TestClientServiceTypeNeedsTheOperatorsPermission(t *testing.T) {
	withType := func(typ string) *etcdv1beta2.EtcdCluster {
		c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a"}}
		if typ != "" {
			c.Annotations = map[string]string{etcdv1beta2.ClientServiceTypeAnnotation: typ}
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		allowed []corev1.ServiceType
		typ     string
		refused bool
	}{
		{"no type", nil, "", false},
		{"ClusterIP always", nil, "ClusterIP", false},
		{"NodePort by default", nil, "NodePort", true},
		{"LoadBalancer by default", nil, "LoadBalancer", true},
		{"NodePort allowed", []corev1.ServiceType{corev1.ServiceTypeNodePort}, "NodePort", false},
		{"LoadBalancer when only NodePort is allowed", []corev1.ServiceType{corev1.ServiceTypeNodePort}, "LoadBalancer", true},
		{"LoadBalancer allowed", []corev1.ServiceType{corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}, "LoadBalancer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{ClientServiceTypes: tc.allowed}
			err := r.checkClientServiceType(withType(tc.typ))
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), tc.typ) || !strings.Contains(err.Error(), "--client-service-types")):
				t.Errorf("error %v: want a refusal naming %s and the flag", err, tc.typ)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
}
