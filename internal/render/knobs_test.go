package render

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every pod option reaches every member pod, and every client Service option the client
// Service, while the peer Service stays headless and ClusterIP.
func TestKnobsReachPodsAndServices(t *testing.T) {
	c := coreosSample("3.6.16")
	zone := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}
	custom := corev1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}}
	ndots := "2"
	dns := &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Searches: []string{"example.com"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}}}
	c.Annotations = map[string]string{
		v1beta2.PodImagePullSecretsAnnotation:          `[{"name":"regcred"},{"name":"mirror"}]`,
		v1beta2.PodPriorityClassNameAnnotation:         "etcd-critical",
		v1beta2.PodTopologySpreadConstraintsAnnotation: jsonOf(t, []corev1.TopologySpreadConstraint{zone, custom}),
		v1beta2.PodServiceAccountNameAnnotation:        "etcd-members",
		v1beta2.PodDNSConfigAnnotation:                 jsonOf(t, dns),

		v1beta2.ClientServiceTypeAnnotation:                     "LoadBalancer",
		v1beta2.ClientServiceAnnotationsAnnotation:              `{"lb.example/internal":"true"}`,
		v1beta2.ClientServiceLabelsAnnotation:                   `{"team":"storage"}`,
		v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation: `["10.0.0.0/8","192.168.0.0/16"]`,
		v1beta2.ClientServiceExternalTrafficPolicyAnnotation:    "Local",
		v1beta2.ClientServiceIPFamilyPolicyAnnotation:           "PreferDualStack",
		v1beta2.ClientServiceIPFamiliesAnnotation:               `["IPv4","IPv6"]`,
	}
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 3, "")})
	if len(got.pods) != 3 {
		t.Fatalf("%d pods", len(got.pods))
	}
	zoneWant := zone
	zoneWant.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{LabelCluster: "example"}}
	for name, p := range got.pods {
		s := p.Spec
		if !equality.Semantic.DeepEqual(s.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}) {
			t.Errorf("%s: imagePullSecrets %v", name, s.ImagePullSecrets)
		}
		if s.PriorityClassName != "etcd-critical" {
			t.Errorf("%s: priorityClassName %q", name, s.PriorityClassName)
		}
		if !equality.Semantic.DeepEqual(s.TopologySpreadConstraints, []corev1.TopologySpreadConstraint{zoneWant, custom}) {
			t.Errorf("%s: topologySpreadConstraints %+v", name, s.TopologySpreadConstraints)
		}
		if s.ServiceAccountName != "etcd-members" || s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
			t.Errorf("%s: serviceAccountName %q, automount %v", name, s.ServiceAccountName, s.AutomountServiceAccountToken)
		}
		if !equality.Semantic.DeepEqual(s.DNSConfig, dns) || s.DNSPolicy != "" && s.DNSPolicy != corev1.DNSClusterFirst {
			t.Errorf("%s: dnsConfig %+v policy %q", name, s.DNSConfig, s.DNSPolicy)
		}
		if p.Labels[LabelCluster] != "example" {
			t.Errorf("%s: the default spread selector would not count it: labels %v", name, p.Labels)
		}
	}

	cs := got.services["example-client"]
	if cs.Spec.Type != corev1.ServiceTypeLoadBalancer || cs.Annotations["lb.example/internal"] != "true" ||
		cs.Labels["team"] != "storage" || cs.Labels[LabelCluster] != "example" ||
		strings.Join(cs.Spec.LoadBalancerSourceRanges, ",") != "10.0.0.0/8,192.168.0.0/16" ||
		cs.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
		cs.Spec.IPFamilyPolicy == nil || *cs.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack ||
		!equality.Semantic.DeepEqual(cs.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) {
		t.Errorf("client service %+v", cs)
	}
	peer := got.services["example"]
	if peer.Spec.ClusterIP != corev1.ClusterIPNone || peer.Spec.Type != "" || len(peer.Annotations) != 0 || peer.Labels["team"] != "" ||
		peer.Spec.ExternalTrafficPolicy != "" || len(peer.Spec.LoadBalancerSourceRanges) != 0 {
		t.Errorf("peer service changed: %+v", peer)
	}
}

// The operator's labels win over the user's on the client Service; without options it
// is a plain ClusterIP Service, and pods get none of the options.
func TestKnobsDefaults(t *testing.T) {
	c := coreosSample("3.6.16")
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, "")})
	cs := got.services["example-client"]
	if cs.Spec.Type != corev1.ServiceTypeClusterIP || len(cs.Annotations) != 0 || cs.Spec.ExternalTrafficPolicy != "" || cs.Spec.IPFamilyPolicy != nil {
		t.Errorf("client service %+v", cs.Spec)
	}
	p := got.pods["example-0000"]
	if len(p.Spec.ImagePullSecrets) != 0 || p.Spec.PriorityClassName != "" || len(p.Spec.TopologySpreadConstraints) != 0 ||
		p.Spec.ServiceAccountName != "" || p.Spec.DNSConfig != nil {
		t.Errorf("pod options without any set: %+v", p.Spec)
	}
}

// Bad option annotations and the refused pod fields are refused, naming the annotation
// or field: the controller reports it in the InvalidSpec condition.
func TestKnobsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *v1beta2.EtcdCluster)
		want string
	}{
		{"pull secrets not JSON", func(c *v1beta2.EtcdCluster) { c.Annotations[v1beta2.PodImagePullSecretsAnnotation] = "regcred" }, v1beta2.PodImagePullSecretsAnnotation},
		{"pull secret unknown field", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.PodImagePullSecretsAnnotation] = `[{"nam":"regcred"}]`
		}, v1beta2.PodImagePullSecretsAnnotation},
		{"priority class not a name", func(c *v1beta2.EtcdCluster) { c.Annotations[v1beta2.PodPriorityClassNameAnnotation] = "High Priority" }, v1beta2.PodPriorityClassNameAnnotation},
		{"account not a name", func(c *v1beta2.EtcdCluster) { c.Annotations[v1beta2.PodServiceAccountNameAnnotation] = "a/b" }, v1beta2.PodServiceAccountNameAnnotation},
		{"spread skew 0", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.PodTopologySpreadConstraintsAnnotation] = `[{"maxSkew":0,"topologyKey":"z","whenUnsatisfiable":"DoNotSchedule"}]`
		}, v1beta2.PodTopologySpreadConstraintsAnnotation},
		{"four nameservers", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.PodDNSConfigAnnotation] = `{"nameservers":["1.1.1.1","1.1.1.2","1.1.1.3","1.1.1.4"]}`
		}, v1beta2.PodDNSConfigAnnotation},
		{"service type", func(c *v1beta2.EtcdCluster) { c.Annotations[v1beta2.ClientServiceTypeAnnotation] = "ExternalName" }, v1beta2.ClientServiceTypeAnnotation},
		{"traffic policy on ClusterIP", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.ClientServiceExternalTrafficPolicyAnnotation] = "Local"
		}, v1beta2.ClientServiceExternalTrafficPolicyAnnotation},
		{"source ranges on NodePort", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.ClientServiceTypeAnnotation] = "NodePort"
			c.Annotations[v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation] = `["10.0.0.0/8"]`
		}, v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation},
		{"source range not a CIDR", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.ClientServiceTypeAnnotation] = "LoadBalancer"
			c.Annotations[v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation] = `["10.0.0.0"]`
		}, v1beta2.ClientServiceLoadBalancerSourceRangesAnnotation},
		{"reserved service label", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.ClientServiceLabelsAnnotation] = `{"etcd_cluster":"other"}`
		}, v1beta2.ClientServiceLabelsAnnotation},
		{"two families single stack", func(c *v1beta2.EtcdCluster) {
			c.Annotations[v1beta2.ClientServiceIPFamilyPolicyAnnotation] = "SingleStack"
			c.Annotations[v1beta2.ClientServiceIPFamiliesAnnotation] = `["IPv4","IPv6"]`
		}, v1beta2.ClientServiceIPFamiliesAnnotation},
		{"hostAliases", func(c *v1beta2.EtcdCluster) {
			c.Spec.Pod = &v1beta2.PodPolicy{HostAliases: []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"example-0001"}}}}
		}, "spec.pod.hostAliases"},
		{"volumes", func(c *v1beta2.EtcdCluster) {
			c.Spec.Pod = &v1beta2.PodPolicy{Volumes: []v1beta2.RefusedVolume{{Name: "x"}}}
		}, "spec.pod.volumes"},
		{"volumeMounts", func(c *v1beta2.EtcdCluster) {
			c.Spec.Pod = &v1beta2.PodPolicy{VolumeMounts: []v1beta2.RefusedVolume{{Name: "x"}}}
		}, "spec.pod.volumeMounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := coreosSample("3.6.16")
			c.Annotations = map[string]string{}
			tc.set(c)
			err := ValidateCluster(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ValidateCluster: %v, want an error naming %s", err, tc.want)
			}
			if _, err := sharedRenderer.Render(Input{Cluster: c, Members: bootstrap(c, 1, "")}); err == nil {
				t.Fatal("Render accepted it")
			}
		})
	}
}

// Helper pods inherit the members' pull secrets, priority class and tolerations; a
// cluster whose options are invalid passes on its tolerations only.
func TestInheritedByHelperPods(t *testing.T) {
	c := coreosSample("3.6.16")
	tol := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule}}
	c.Spec.Pod = &v1beta2.PodPolicy{Tolerations: tol}
	c.Annotations = map[string]string{
		v1beta2.PodImagePullSecretsAnnotation:  `[{"name":"regcred"}]`,
		v1beta2.PodPriorityClassNameAnnotation: "etcd-critical",
	}
	s := verifySpec()
	s.Inherit = InheritedFrom(c)
	p, err := VerifyPod(s)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(p.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) ||
		p.Spec.PriorityClassName != "etcd-critical" || !equality.Semantic.DeepEqual(p.Spec.Tolerations, tol) {
		t.Errorf("verification pod %+v", p.Spec)
	}

	c.Annotations[v1beta2.PodPriorityClassNameAnnotation] = "Not A Name"
	if in := InheritedFrom(c); in.PriorityClassName != "" || len(in.ImagePullSecrets) != 0 || !equality.Semantic.DeepEqual(in.Tolerations, tol) {
		t.Errorf("invalid options inherited: %+v", in)
	}
	if in := InheritedFrom(nil); len(in.Tolerations) != 0 || in.PriorityClassName != "" {
		t.Errorf("nil cluster: %+v", in)
	}
}
