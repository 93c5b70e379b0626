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

// Annotations and labels on the client Service are acted on by other controllers
// (exposing the Service through a tunnel or mesh, publishing DNS for it): the operator's
// administrator allows them, not the tenant.
func TestClientServiceMetadataNeedsTheOperatorsPermission(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		allowed bool
		refused bool
	}{
		{"none", nil, false, false},
		{"annotations by default", map[string]string{etcdv1beta2.ClientServiceAnnotationsAnnotation: `{"tailscale.com/expose":"true"}`}, false, true},
		{"labels by default", map[string]string{etcdv1beta2.ClientServiceLabelsAnnotation: `{"expose":"yes"}`}, false, true},
		{"annotations allowed", map[string]string{etcdv1beta2.ClientServiceAnnotationsAnnotation: `{"a":"b"}`}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a", Annotations: tc.ann}}
			err := (&Reconciler{ClientServiceMetadata: tc.allowed}).checkClientServiceType(c)
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), "--allow-client-service-metadata")):
				t.Errorf("error %v: want a refusal naming the flag", err)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
}
