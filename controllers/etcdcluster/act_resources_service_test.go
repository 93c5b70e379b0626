package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestApplyServiceOptions(t *testing.T) {
	ports := func(nodePort int32) []corev1.ServicePort {
		return []corev1.ServicePort{{Name: "client", Port: 2379, NodePort: nodePort}}
	}
	single, dual := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack
	yes := true
	for _, tc := range []struct {
		name       string
		have, want corev1.ServiceSpec
		expect     corev1.ServiceSpec
	}{
		{name: "a new Service takes the chart's",
			have:   corev1.ServiceSpec{},
			want:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(0), ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal},
			expect: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(0), ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}},
		{name: "an allocated node port is kept, and the defaulted traffic policy",
			have:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(31000), ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster},
			want:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(0)},
			expect: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(31000), ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster}},
		{name: "back to ClusterIP drops node ports and load balancer settings",
			have: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports(31000), ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				HealthCheckNodePort: 32000, AllocateLoadBalancerNodePorts: &yes, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}},
			want:   corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(0)},
			expect: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(0)}},
		{name: "the headless peer Service keeps its defaults",
			have:   corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Ports: ports(0), IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &single},
			want:   corev1.ServiceSpec{ClusterIP: "None", Ports: ports(0)},
			expect: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Ports: ports(0), IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &single}},
		{name: "dual stack back to single stack",
			have: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(0), IPFamilyPolicy: &dual,
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, ClusterIPs: []string{"10.0.0.5", "fd00::5"}},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(0), IPFamilyPolicy: &single},
			expect: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(0), IPFamilyPolicy: &single,
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, ClusterIPs: []string{"10.0.0.5"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := tc.have
			applyServiceOptions(&have, &tc.want)
			if !equality.Semantic.DeepEqual(have, tc.expect) {
				t.Errorf("got %+v\nwant %+v", have, tc.expect)
			}
		})
	}
}
