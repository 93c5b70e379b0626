package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

// corefile serves (on 1053: an unprivileged port, so CoreDNS runs without any capability;
// the Service maps 53 to it) the cluster zone from the API server and nothing else: the bench has no
// upstream, so a name outside the cluster gets NXDOMAIN at once. TTLs are short so tests
// see new records within seconds.
const corefile = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        ttl 1
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 1
}
`

// clusterDNSObjects are CoreDNS as cluster DNS: RBAC to read Services, EndpointSlices,
// Pods and Namespaces, its Corefile, a Deployment and Service kube-system/kube-dns at
// ClusterDNSIP.
func clusterDNSObjects() []client.Object {
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: labels}
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta("coredns")},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bench:coredns"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench:coredns"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bench:coredns"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: metav1.NamespaceSystem}}},
		&corev1.ConfigMap{ObjectMeta: meta("coredns"), Data: map[string]string{"Corefile": corefile}},
		&appsv1.Deployment{ObjectMeta: meta("coredns"), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "coredns",
					DNSPolicy:          corev1.DNSDefault,
					PriorityClassName:  "system-cluster-critical",
					// Node faults must not take cluster DNS with them for long.
					Tolerations: []corev1.Toleration{
						{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)},
						{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)},
					},
					Containers: []corev1.Container{{
						Name:  "coredns",
						Image: images.CoreDNSImage,
						Args:  []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 1053, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 1053, Protocol: corev1.ProtocolTCP},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 1,
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}},
							PeriodSeconds:    5,
							FailureThreshold: 5,
						},
						// Pod Security "restricted", as the operator's own pods.
						SecurityContext: &corev1.SecurityContext{
							RunAsUser:                ptr.To[int64](65532),
							RunAsNonRoot:             ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"}}}}},
				},
			},
		}},
		&corev1.Service{ObjectMeta: meta("kube-dns"), Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNSIP,
			Selector:  labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(1053)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(1053)},
			},
		}},
	}
}

// startClusterDNS deploys CoreDNS and waits until this process resolves a Service name
// through the ClusterIP, as every pod and the in-process operator will.
func (b *Bench) startClusterDNS(ctx context.Context) error {
	for _, o := range clusterDNSObjects() {
		if err := b.client.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	r := &net.Resolver{PreferGo: true}
	return b.poll(ctx, "kubernetes.default resolves through cluster DNS", 2*time.Minute, 200*time.Millisecond, func() (bool, string, error) {
		if err := b.nodeDaemonsExited(); err != nil {
			return false, "", err
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(lctx, "kubernetes.default.svc.cluster.local")
		if err != nil {
			return false, err.Error(), nil
		}
		return len(addrs) == 1 && addrs[0] == serviceCIDRFirstIP, fmt.Sprint(addrs), nil
	})
}
