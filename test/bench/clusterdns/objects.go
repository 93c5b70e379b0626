package clusterdns

import (
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

// Names of the objects, as kubeadm names its CoreDNS: the Service is kube-dns, because
// that is the name clients and the kubelet's documentation expect.
const (
	Namespace   = "kube-system"
	Name        = "coredns"
	ServiceName = "kube-dns"
	clusterRole = "system:coredns"
	// withheldMount is where the withhold directory appears in the pod.
	withheldMount = "/withheld"
	configMount   = "/etc/coredns"
)

// Defaults of Options.
const (
	DefaultClusterIP = "10.96.0.10" // the kubelets' clusterDNS
	DefaultDomain    = "cluster.local"
)

// Options configure the cluster DNS. The zero value is the bench's default without
// withholding.
type Options struct {
	// Image runs CoreDNS (default images.CoreDNSImage).
	Image string
	// ClusterIP of the kube-dns Service (default DefaultClusterIP).
	ClusterIP string
	// Domain is the cluster domain (default DefaultDomain).
	Domain string
	// WithholdDir is a host directory, mounted into the pod, where a Withholder puts
	// withheld names. It must exist and be the same path on every node (the bench's
	// nodes share the host's filesystem). Empty: no withholding; the pod then meets the
	// restricted Pod Security level, which forbids hostPath volumes.
	WithholdDir string
	// NodeSelector places the CoreDNS pod, e.g. on a node that node faults spare: with
	// one replica, a node that goes down takes the cluster DNS with it.
	NodeSelector map[string]string
}

func (o Options) domain() string    { return orDefault(o.Domain, DefaultDomain) }
func (o Options) image() string     { return orDefault(o.Image, images.CoreDNSImage) }
func (o Options) clusterIP() string { return orDefault(o.ClusterIP, DefaultClusterIP) }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// podLabels select the CoreDNS pods; k8s-app=kube-dns as kubeadm's, which tools look for.
var podLabels = map[string]string{"k8s-app": "kube-dns"}

// Objects are what to apply for the cluster DNS, in an order that creates each
// object's dependencies first.
func Objects(o Options) []client.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: podLabels}
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(Name)},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: clusterRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: clusterRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: Namespace}},
		},
		&corev1.ConfigMap{ObjectMeta: meta(Name), Data: map[string]string{"Corefile": Corefile(o)}},
		deployment(o, meta(Name)),
		&corev1.Service{
			ObjectMeta: meta(ServiceName),
			Spec: corev1.ServiceSpec{
				Selector:  podLabels,
				ClusterIP: o.clusterIP(),
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns-tcp")},
				},
			},
		},
	}
}

func deployment(o Options, meta metav1.ObjectMeta) *appsv1.Deployment {
	volumes := []corev1.Volume{{
		Name: "config",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: Name},
		}},
	}}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: configMount, ReadOnly: true}}
	if o.WithholdDir != "" {
		volumes = append(volumes, corev1.Volume{
			Name: "withheld",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: o.WithholdDir, Type: ptr.To(corev1.HostPathDirectory),
			}},
		})
		mounts = append(mounts, corev1.VolumeMount{Name: "withheld", MountPath: withheldMount, ReadOnly: true})
	}
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 3,
		}
	}
	liveness := probe("/health", HealthPort)
	liveness.PeriodSeconds, liveness.FailureThreshold = 5, 5 // a busy machine is no reason to restart it
	return &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name,
					NodeSelector:       o.NodeSelector,
					// Default: the node's resolver configuration, not the cluster DNS
					// that this pod is; CoreDNS forwards nowhere anyway.
					DNSPolicy: corev1.DNSDefault,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						RunAsGroup:     ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "coredns",
						Image: o.image(),
						Args:  []string{"-conf", configMount + "/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: DNSPort, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: DNSPort, Protocol: corev1.ProtocolTCP},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("50m"),
								corev1.ResourceMemory: resource.MustParse("64Mi"),
							},
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")},
						},
						VolumeMounts:   mounts,
						LivenessProbe:  liveness,
						ReadinessProbe: probe("/ready", ReadyPort),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: volumes,
				},
			},
		},
	}
}
