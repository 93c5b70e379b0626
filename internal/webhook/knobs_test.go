package webhook_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcd-operator/etcd-operator/api/v1"
	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The member pod and client Service options through a real API server: v1 fields are
// stored as the v1beta2 annotations and read back unchanged, and bad values are refused
// at admission, naming the field.
func TestPodAndServiceOptionsThroughAPIServer(t *testing.T) {
	c := startConversion(t)
	ctx := context.Background()
	const ns = "default"
	dual := corev1.IPFamilyPolicyPreferDualStack
	ndots := "2"
	pod := &etcdv1.PodPolicy{
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "regcred"}},
		PriorityClassName: "etcd-critical",
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.DoNotSchedule}},
		ServiceAccountName: "etcd-members",
		DNSConfig:          &corev1.PodDNSConfig{Searches: []string{"example.com"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}}},
	}
	svc := &etcdv1.ClientService{Type: corev1.ServiceTypeLoadBalancer, Annotations: map[string]string{"lb.example/internal": "true"},
		Labels: map[string]string{"team": "storage"}, LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
		ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, IPFamilyPolicy: &dual, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}

	t.Run("v1 options are stored as v1beta2 annotations and read back", func(t *testing.T) {
		e := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "knobs", Namespace: ns},
			Spec: etcdv1.EtcdClusterSpec{Size: 3, Pod: pod.DeepCopy(), ClientService: svc.DeepCopy()}}
		if err := c.Create(ctx, e); err != nil {
			t.Fatalf("create as v1: %v", err)
		}
		var hub v1beta2.EtcdCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), &hub); err != nil {
			t.Fatal(err)
		}
		k, err := v1beta2.PodKnobsFromAnnotations(hub.Annotations)
		if err != nil || k.PriorityClassName != "etcd-critical" || len(k.ImagePullSecrets) != 1 || len(k.TopologySpreadConstraints) != 1 ||
			k.ServiceAccountName != "etcd-members" || k.DNSConfig == nil {
			t.Errorf("v1beta2 pod options %+v (%v) from %v", k, err, hub.Annotations)
		}
		s, err := v1beta2.ClientServiceKnobsFromAnnotations(hub.Annotations)
		if err != nil || s.Type != corev1.ServiceTypeLoadBalancer || s.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
			s.Labels["team"] != "storage" || len(s.LoadBalancerSourceRanges) != 1 {
			t.Errorf("v1beta2 service options %+v (%v)", s, err)
		}
		var back etcdv1.EtcdCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), &back); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(back.Spec.Pod, pod) || !equality.Semantic.DeepEqual(back.Spec.ClientService, svc) {
			t.Errorf("read back as v1: pod %+v service %+v", back.Spec.Pod, back.Spec.ClientService)
		}
		if len(back.Annotations) != 0 {
			t.Errorf("v1 object has annotations %v", back.Annotations)
		}
	})

	withPod := func(name string, p etcdv1.PodPolicy) client.Object {
		return &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: etcdv1.EtcdClusterSpec{Size: 1, Pod: &p}}
	}
	withService := func(name string, s etcdv1.ClientService) client.Object {
		return &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: etcdv1.EtcdClusterSpec{Size: 1, ClientService: &s}}
	}
	single := corev1.IPFamilyPolicySingleStack
	for _, tc := range []struct {
		name, field string
		obj         client.Object
	}{
		{"hostAliases", "spec.pod.hostAliases", withPod("host-aliases", etcdv1.PodPolicy{HostAliases: []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"x"}}}})},
		{"volumes", "spec.pod.volumes", withPod("volumes", etcdv1.PodPolicy{Volumes: []v1beta2.RefusedVolume{{Name: "extra"}}})},
		{"volumeMounts", "spec.pod.volumeMounts", withPod("mounts", etcdv1.PodPolicy{VolumeMounts: []v1beta2.RefusedVolume{{Name: "extra"}}})},
		{"v1beta2 hostAliases", "spec.pod.hostAliases", &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "old-host-aliases", Namespace: ns},
			Spec: v1beta2.EtcdClusterSpec{Size: 1, Pod: &v1beta2.PodPolicy{HostAliases: []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"x"}}}}}}},
		{"v1beta2 volumes", "spec.pod.volumes", &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "old-volumes", Namespace: ns},
			Spec: v1beta2.EtcdClusterSpec{Size: 1, Pod: &v1beta2.PodPolicy{Volumes: []v1beta2.RefusedVolume{{Name: "extra"}}}}}},
		{"pull secret without a name", "spec.pod.imagePullSecrets", withPod("nameless-secret", etcdv1.PodPolicy{ImagePullSecrets: []corev1.LocalObjectReference{{}}})},
		{"priority class not a name", "spec.pod.priorityClassName", withPod("bad-priority", etcdv1.PodPolicy{PriorityClassName: "High Priority"})},
		{"service account not a name", "spec.pod.serviceAccountName", withPod("bad-account", etcdv1.PodPolicy{ServiceAccountName: "a/b"})},
		{"spread skew 0", "spec.pod.topologySpreadConstraints", withPod("skew", etcdv1.PodPolicy{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 0, TopologyKey: "z", WhenUnsatisfiable: corev1.DoNotSchedule}}})},
		{"spread bad whenUnsatisfiable", "spec.pod.topologySpreadConstraints", withPod("unsatisfiable", etcdv1.PodPolicy{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "z", WhenUnsatisfiable: "Sometimes"}}})},
		{"four nameservers", "spec.pod.dnsConfig", withPod("nameservers", etcdv1.PodPolicy{DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}}})},
		{"service type ExternalName", "spec.clientService.type", withService("external-name", etcdv1.ClientService{Type: corev1.ServiceTypeExternalName})},
		{"externalTrafficPolicy on ClusterIP", "spec.clientService.externalTrafficPolicy", withService("etp-clusterip", etcdv1.ClientService{
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal})},
		{"source ranges on NodePort", "spec.clientService.loadBalancerSourceRanges", withService("ranges-nodeport", etcdv1.ClientService{
			Type: corev1.ServiceTypeNodePort, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}})},
		{"source range not a CIDR", "spec.clientService.loadBalancerSourceRanges", withService("ranges-bad", etcdv1.ClientService{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.1"}})},
		{"reserved service label", "spec.clientService.labels", withService("svc-label", etcdv1.ClientService{Labels: map[string]string{"app": "mine"}})},
		{"two families on one stack", "spec.clientService.ipFamilies", withService("families", etcdv1.ClientService{
			IPFamilyPolicy: &single, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}})},
	} {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			err := c.Create(ctx, tc.obj)
			if err == nil {
				t.Fatalf("accepted; want a rejection naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
		})
	}
}
