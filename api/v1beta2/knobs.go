package v1beta2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Member pod and client Service options CoreOS's API has no field for. v1 has them as
// spec.pod fields and spec.clientService; v1beta2 stores them as these annotations on
// the EtcdCluster. Strings are written as they are; lists, maps and objects as JSON in
// the form of the v1 field (e.g. [{"name":"regcred"}]). The operator reads them when it
// renders pods and Services: a bad value is reported in the InvalidSpec condition and
// nothing is changed until it is fixed. A change of a pod option rolls out to the
// members one at a time through new pods (the SpecApplied condition says how far); a
// change of a Service option updates the client Service in place.
const (
	// PodImagePullSecretsAnnotation: Secrets (of the cluster's namespace) to pull the
	// etcd image with; also given to the backup, restore and verification pods. JSON
	// list of {"name": ...}.
	PodImagePullSecretsAnnotation = "etcd.database.coreos.com/pod-image-pull-secrets"
	// PodPriorityClassNameAnnotation: the member pods' PriorityClass; also given to the
	// backup, restore and verification pods.
	PodPriorityClassNameAnnotation = "etcd.database.coreos.com/pod-priority-class-name"
	// PodTopologySpreadConstraintsAnnotation: JSON list of corev1 topology spread
	// constraints of the member pods; one without a labelSelector counts this cluster's
	// members.
	PodTopologySpreadConstraintsAnnotation = "etcd.database.coreos.com/pod-topology-spread-constraints"
	// PodServiceAccountNameAnnotation: the member pods' ServiceAccount; its token is
	// never mounted (etcd does not talk to the Kubernetes API). Absent: the namespace's
	// default account.
	PodServiceAccountNameAnnotation = "etcd.database.coreos.com/pod-service-account-name"
	// PodDNSConfigAnnotation: JSON corev1 PodDNSConfig of the member pods (nameservers,
	// searches, options), added to the pods' cluster DNS settings.
	PodDNSConfigAnnotation = "etcd.database.coreos.com/pod-dns-config"

	// ClientServiceTypeAnnotation: ClusterIP (absent), NodePort or LoadBalancer.
	ClientServiceTypeAnnotation = "etcd.database.coreos.com/client-service-type"
	// ClientServiceAnnotationsAnnotation: JSON map of annotations of the client Service.
	ClientServiceAnnotationsAnnotation = "etcd.database.coreos.com/client-service-annotations"
	// ClientServiceLabelsAnnotation: JSON map of labels of the client Service; keys "app"
	// and "etcd_*" are the operator's.
	ClientServiceLabelsAnnotation = "etcd.database.coreos.com/client-service-labels"
	// ClientServiceLoadBalancerSourceRangesAnnotation: JSON list of CIDRs allowed to
	// reach a LoadBalancer client Service.
	ClientServiceLoadBalancerSourceRangesAnnotation = "etcd.database.coreos.com/client-service-load-balancer-source-ranges"
	// ClientServiceExternalTrafficPolicyAnnotation: Cluster or Local; NodePort and
	// LoadBalancer only.
	ClientServiceExternalTrafficPolicyAnnotation = "etcd.database.coreos.com/client-service-external-traffic-policy"
	// ClientServiceIPFamilyPolicyAnnotation: SingleStack, PreferDualStack or
	// RequireDualStack.
	ClientServiceIPFamilyPolicyAnnotation = "etcd.database.coreos.com/client-service-ip-family-policy"
	// ClientServiceIPFamiliesAnnotation: JSON list of IPv4 and/or IPv6.
	ClientServiceIPFamiliesAnnotation = "etcd.database.coreos.com/client-service-ip-families"
)

// PodKnobAnnotations are the member pod options above: a change of any of them rolls
// out through new pods.
var PodKnobAnnotations = []string{
	PodImagePullSecretsAnnotation,
	PodPriorityClassNameAnnotation,
	PodTopologySpreadConstraintsAnnotation,
	PodServiceAccountNameAnnotation,
	PodDNSConfigAnnotation,
}

// PodKnobs are the member pod options of a cluster.
type PodKnobs struct {
	ImagePullSecrets          []corev1.LocalObjectReference     `json:"imagePullSecrets,omitempty"`
	PriorityClassName         string                            `json:"priorityClassName,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	ServiceAccountName        string                            `json:"serviceAccountName,omitempty"`
	DNSConfig                 *corev1.PodDNSConfig              `json:"dnsConfig,omitempty"`
}

// ClientServiceKnobs are the client Service options of a cluster.
type ClientServiceKnobs struct {
	Type                     corev1.ServiceType                  `json:"type,omitempty"`
	Annotations              map[string]string                   `json:"annotations,omitempty"`
	Labels                   map[string]string                   `json:"labels,omitempty"`
	LoadBalancerSourceRanges []string                            `json:"loadBalancerSourceRanges,omitempty"`
	ExternalTrafficPolicy    corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
	IPFamilyPolicy           *corev1.IPFamilyPolicy              `json:"ipFamilyPolicy,omitempty"`
	IPFamilies               []corev1.IPFamily                   `json:"ipFamilies,omitempty"`
}

// Bounds of the options, the same in v1's schema.
const (
	MaxImagePullSecrets          = 16
	MaxTopologySpreadConstraints = 8
	MaxDNSNameservers            = 3
	MaxDNSSearches               = 32
	MaxClientServiceMetadata     = 64
	MaxLoadBalancerSourceRanges  = 64
)

// dnsSubdomainRE is an RFC 1123 subdomain, as Kubernetes names are.
var dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func isName(s string) bool { return len(s) <= 253 && dnsSubdomainRE.MatchString(s) }

// decodeJSONAnnotation decodes a JSON annotation strictly (unknown fields are errors).
func decodeJSONAnnotation(a map[string]string, key string, into any) error {
	v := a[key]
	if v == "" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(v)))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return fmt.Errorf("annotation %s: not the JSON form of the v1 field: %v", key, err)
	}
	if d.More() {
		return fmt.Errorf("annotation %s: more than one JSON value", key)
	}
	return nil
}

// PodKnobsFromAnnotations reads and checks the member pod options. The error names
// the annotation.
func PodKnobsFromAnnotations(a map[string]string) (PodKnobs, error) {
	var k PodKnobs
	if err := decodeJSONAnnotation(a, PodImagePullSecretsAnnotation, &k.ImagePullSecrets); err != nil {
		return k, err
	}
	if err := decodeJSONAnnotation(a, PodTopologySpreadConstraintsAnnotation, &k.TopologySpreadConstraints); err != nil {
		return k, err
	}
	if a[PodDNSConfigAnnotation] != "" {
		k.DNSConfig = &corev1.PodDNSConfig{}
		if err := decodeJSONAnnotation(a, PodDNSConfigAnnotation, k.DNSConfig); err != nil {
			return k, err
		}
	}
	k.PriorityClassName = a[PodPriorityClassNameAnnotation]
	k.ServiceAccountName = a[PodServiceAccountNameAnnotation]
	return k, k.Validate(func(field string) string { return "annotation " + podKnobAnnotation[field] })
}

var podKnobAnnotation = map[string]string{
	"imagePullSecrets":          PodImagePullSecretsAnnotation,
	"priorityClassName":         PodPriorityClassNameAnnotation,
	"topologySpreadConstraints": PodTopologySpreadConstraintsAnnotation,
	"serviceAccountName":        PodServiceAccountNameAnnotation,
	"dnsConfig":                 PodDNSConfigAnnotation,
}

// Validate checks the options as v1's schema does; name(field) is how an error names
// the field ("imagePullSecrets", ...).
func (k PodKnobs) Validate(name func(string) string) error {
	if len(k.ImagePullSecrets) > MaxImagePullSecrets {
		return fmt.Errorf("%s: at most %d Secrets", name("imagePullSecrets"), MaxImagePullSecrets)
	}
	for _, s := range k.ImagePullSecrets {
		if !isName(s.Name) {
			return fmt.Errorf("%s: %q is not a Secret name", name("imagePullSecrets"), s.Name)
		}
	}
	if k.PriorityClassName != "" && !isName(k.PriorityClassName) {
		return fmt.Errorf("%s: %q is not a PriorityClass name", name("priorityClassName"), k.PriorityClassName)
	}
	if k.ServiceAccountName != "" && !isName(k.ServiceAccountName) {
		return fmt.Errorf("%s: %q is not a ServiceAccount name", name("serviceAccountName"), k.ServiceAccountName)
	}
	if len(k.TopologySpreadConstraints) > MaxTopologySpreadConstraints {
		return fmt.Errorf("%s: at most %d constraints", name("topologySpreadConstraints"), MaxTopologySpreadConstraints)
	}
	for _, t := range k.TopologySpreadConstraints {
		switch {
		case t.MaxSkew < 1:
			return fmt.Errorf("%s: maxSkew must be at least 1", name("topologySpreadConstraints"))
		case t.TopologyKey == "":
			return fmt.Errorf("%s: topologyKey must be set", name("topologySpreadConstraints"))
		case t.WhenUnsatisfiable != corev1.DoNotSchedule && t.WhenUnsatisfiable != corev1.ScheduleAnyway:
			return fmt.Errorf("%s: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway", name("topologySpreadConstraints"))
		}
	}
	if d := k.DNSConfig; d != nil {
		if len(d.Nameservers) > MaxDNSNameservers {
			return fmt.Errorf("%s: at most %d nameservers", name("dnsConfig"), MaxDNSNameservers)
		}
		for _, ns := range d.Nameservers {
			if _, err := netip.ParseAddr(ns); err != nil {
				return fmt.Errorf("%s: nameserver %q is not an IP address", name("dnsConfig"), ns)
			}
		}
		if len(d.Searches) > MaxDNSSearches {
			return fmt.Errorf("%s: at most %d searches", name("dnsConfig"), MaxDNSSearches)
		}
	}
	return nil
}

// ClientServiceKnobsFromAnnotations reads and checks the client Service options. The
// error names the annotation.
func ClientServiceKnobsFromAnnotations(a map[string]string) (ClientServiceKnobs, error) {
	var k ClientServiceKnobs
	for key, into := range map[string]any{
		ClientServiceAnnotationsAnnotation:              &k.Annotations,
		ClientServiceLabelsAnnotation:                   &k.Labels,
		ClientServiceLoadBalancerSourceRangesAnnotation: &k.LoadBalancerSourceRanges,
		ClientServiceIPFamiliesAnnotation:               &k.IPFamilies,
	} {
		if err := decodeJSONAnnotation(a, key, into); err != nil {
			return k, err
		}
	}
	k.Type = corev1.ServiceType(a[ClientServiceTypeAnnotation])
	k.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(a[ClientServiceExternalTrafficPolicyAnnotation])
	if v := a[ClientServiceIPFamilyPolicyAnnotation]; v != "" {
		p := corev1.IPFamilyPolicy(v)
		k.IPFamilyPolicy = &p
	}
	return k, k.Validate(func(field string) string { return "annotation " + serviceKnobAnnotation[field] })
}

var serviceKnobAnnotation = map[string]string{
	"type":                     ClientServiceTypeAnnotation,
	"annotations":              ClientServiceAnnotationsAnnotation,
	"labels":                   ClientServiceLabelsAnnotation,
	"loadBalancerSourceRanges": ClientServiceLoadBalancerSourceRangesAnnotation,
	"externalTrafficPolicy":    ClientServiceExternalTrafficPolicyAnnotation,
	"ipFamilyPolicy":           ClientServiceIPFamilyPolicyAnnotation,
	"ipFamilies":               ClientServiceIPFamiliesAnnotation,
}

// Validate checks the options as v1's schema does; name(field) is how an error names
// the field ("type", ...).
func (k ClientServiceKnobs) Validate(name func(string) string) error {
	switch k.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return fmt.Errorf("%s: %q is not ClusterIP, NodePort or LoadBalancer", name("type"), k.Type)
	}
	if len(k.Annotations) > MaxClientServiceMetadata {
		return fmt.Errorf("%s: at most %d", name("annotations"), MaxClientServiceMetadata)
	}
	if len(k.Labels) > MaxClientServiceMetadata {
		return fmt.Errorf("%s: at most %d", name("labels"), MaxClientServiceMetadata)
	}
	for key := range k.Labels {
		if key == "app" || strings.HasPrefix(key, "etcd_") {
			return fmt.Errorf("%s: label keys 'app' and 'etcd_*' are reserved", name("labels"))
		}
	}
	lb := k.Type == corev1.ServiceTypeLoadBalancer
	if len(k.LoadBalancerSourceRanges) > 0 && !lb {
		return fmt.Errorf("%s: only for type LoadBalancer", name("loadBalancerSourceRanges"))
	}
	if len(k.LoadBalancerSourceRanges) > MaxLoadBalancerSourceRanges {
		return fmt.Errorf("%s: at most %d", name("loadBalancerSourceRanges"), MaxLoadBalancerSourceRanges)
	}
	for _, r := range k.LoadBalancerSourceRanges {
		if _, err := netip.ParsePrefix(r); err != nil {
			return fmt.Errorf("%s: %q is not a CIDR", name("loadBalancerSourceRanges"), r)
		}
	}
	switch k.ExternalTrafficPolicy {
	case "":
	case corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal:
		if k.Type != corev1.ServiceTypeNodePort && !lb {
			return fmt.Errorf("%s: only for type NodePort or LoadBalancer", name("externalTrafficPolicy"))
		}
	default:
		return fmt.Errorf("%s: %q is not Cluster or Local", name("externalTrafficPolicy"), k.ExternalTrafficPolicy)
	}
	if p := k.IPFamilyPolicy; p != nil {
		switch *p {
		case corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
		default:
			return fmt.Errorf("%s: %q is not SingleStack, PreferDualStack or RequireDualStack", name("ipFamilyPolicy"), *p)
		}
	}
	if len(k.IPFamilies) > 2 {
		return fmt.Errorf("%s: at most two", name("ipFamilies"))
	}
	for i, f := range k.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			return fmt.Errorf("%s: %q is not IPv4 or IPv6", name("ipFamilies"), f)
		}
		if i == 1 && f == k.IPFamilies[0] {
			return fmt.Errorf("%s: a family twice", name("ipFamilies"))
		}
	}
	if len(k.IPFamilies) == 2 && k.IPFamilyPolicy != nil && *k.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		return fmt.Errorf("%s: two families need a dual-stack ipFamilyPolicy", name("ipFamilies"))
	}
	return nil
}

// ClientServiceAnnotations are the client Service options above.
var ClientServiceAnnotations = []string{
	ClientServiceTypeAnnotation,
	ClientServiceAnnotationsAnnotation,
	ClientServiceLabelsAnnotation,
	ClientServiceLoadBalancerSourceRangesAnnotation,
	ClientServiceExternalTrafficPolicyAnnotation,
	ClientServiceIPFamilyPolicyAnnotation,
	ClientServiceIPFamiliesAnnotation,
}
