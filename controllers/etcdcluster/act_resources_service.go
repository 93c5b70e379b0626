package etcdcluster

import (
	corev1 "k8s.io/api/core/v1"
)

// applyServiceOptions copies the chart's ports, type and traffic settings (the client
// Service's options: v1 spec.clientService) onto a Service that may exist already,
// keeping what the API server allocated: node ports while the type still has them, the
// health check node port, and the IP families unless the options name them. Settings
// the new type cannot have are cleared, so a change of type is one update.
func applyServiceOptions(have, want *corev1.ServiceSpec) {
	nodePorts := map[string]int32{}
	for _, p := range have.Ports {
		nodePorts[p.Name] = p.NodePort
	}
	if want.Type != "" {
		have.Type = want.Type
	}
	external := have.Type == corev1.ServiceTypeNodePort || have.Type == corev1.ServiceTypeLoadBalancer
	have.Ports = make([]corev1.ServicePort, len(want.Ports))
	for i, p := range want.Ports {
		if p.NodePort == 0 && external {
			p.NodePort = nodePorts[p.Name]
		}
		have.Ports[i] = p
	}
	have.LoadBalancerSourceRanges = want.LoadBalancerSourceRanges
	switch {
	case !external:
		have.ExternalTrafficPolicy = ""
	case want.ExternalTrafficPolicy != "":
		have.ExternalTrafficPolicy = want.ExternalTrafficPolicy
	case have.ExternalTrafficPolicy == "":
		have.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster // the API server's default
	}
	if have.Type != corev1.ServiceTypeLoadBalancer || have.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		have.HealthCheckNodePort = 0
	}
	if have.Type != corev1.ServiceTypeLoadBalancer {
		have.AllocateLoadBalancerNodePorts = nil
	}
	if want.IPFamilyPolicy != nil {
		have.IPFamilyPolicy = want.IPFamilyPolicy
	}
	if len(want.IPFamilies) > 0 {
		have.IPFamilies = want.IPFamilies
	}
	// Back to one stack: the secondary family and its address go.
	if p := have.IPFamilyPolicy; p != nil && *p == corev1.IPFamilyPolicySingleStack {
		if len(have.IPFamilies) > 1 {
			have.IPFamilies = have.IPFamilies[:1]
		}
		if len(have.ClusterIPs) > 1 {
			have.ClusterIPs = have.ClusterIPs[:1]
		}
	}
}
