package clusterdns

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

type objects struct {
	sa      *corev1.ServiceAccount
	role    *rbacv1.ClusterRole
	binding *rbacv1.ClusterRoleBinding
	cm      *corev1.ConfigMap
	deploy  *appsv1.Deployment
	svc     *corev1.Service
}

// split checks the kinds and their order (dependencies first) and returns them typed.
func split(t *testing.T, objs []client.Object) objects {
	t.Helper()
	if len(objs) != 6 {
		t.Fatalf("%d objects, want 6", len(objs))
	}
	var o objects
	var ok [6]bool
	o.sa, ok[0] = objs[0].(*corev1.ServiceAccount)
	o.role, ok[1] = objs[1].(*rbacv1.ClusterRole)
	o.binding, ok[2] = objs[2].(*rbacv1.ClusterRoleBinding)
	o.cm, ok[3] = objs[3].(*corev1.ConfigMap)
	o.deploy, ok[4] = objs[4].(*appsv1.Deployment)
	o.svc, ok[5] = objs[5].(*corev1.Service)
	if slices.Contains(ok[:], false) {
		t.Fatalf("kinds or order wrong: %T %T %T %T %T %T", objs[0], objs[1], objs[2], objs[3], objs[4], objs[5])
	}
	for _, obj := range []client.Object{o.sa, o.cm, o.deploy, o.svc} {
		if obj.GetNamespace() != Namespace {
			t.Errorf("%T %s in namespace %q", obj, obj.GetName(), obj.GetNamespace())
		}
	}
	return o
}

func TestDefaultObjects(t *testing.T) {
	o := split(t, Objects(Options{}))

	if o.svc.Name != "kube-dns" || o.svc.Spec.ClusterIP != "10.96.0.10" {
		t.Errorf("service %s clusterIP %s", o.svc.Name, o.svc.Spec.ClusterIP)
	}
	pod := o.deploy.Spec.Template
	if !labels.SelectorFromSet(o.svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		t.Errorf("service selector %v does not select pods labelled %v", o.svc.Spec.Selector, pod.Labels)
	}
	if *o.deploy.Spec.Replicas != 1 || pod.Spec.DNSPolicy != corev1.DNSDefault || pod.Spec.ServiceAccountName != o.sa.Name {
		t.Errorf("replicas %d dnsPolicy %s serviceAccount %s", *o.deploy.Spec.Replicas, pod.Spec.DNSPolicy, pod.Spec.ServiceAccountName)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Image != images.CoreDNSImage {
		t.Errorf("image %s", c.Image)
	}

	// Each Service port reaches a container port of the same protocol, by name.
	want := map[corev1.Protocol]bool{corev1.ProtocolUDP: true, corev1.ProtocolTCP: true}
	for _, sp := range o.svc.Spec.Ports {
		if sp.Port != 53 {
			t.Errorf("service port %s is %d, want 53", sp.Name, sp.Port)
		}
		i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == sp.TargetPort.StrVal })
		if i < 0 || c.Ports[i].Protocol != sp.Protocol || c.Ports[i].ContainerPort != DNSPort {
			t.Errorf("service port %s/%s targets %q, not a %s container port %d", sp.Name, sp.Protocol, sp.TargetPort.String(), sp.Protocol, DNSPort)
		}
		delete(want, sp.Protocol)
	}
	if len(want) != 0 {
		t.Errorf("service lacks protocols %v", want)
	}

	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" || p.HTTPGet.Port.IntValue() != ReadyPort {
		t.Errorf("readiness probe %+v", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.IntValue() != HealthPort {
		t.Errorf("liveness probe %+v", p)
	}

	// The Corefile the pod reads is the ConfigMap's, and serves the cluster from the API.
	if !slices.Equal(c.Args, []string{"-conf", "/etc/coredns/Corefile"}) ||
		!slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/coredns" }) {
		t.Errorf("args %v mounts %v", c.Args, c.VolumeMounts)
	}
	corefile := o.cm.Data["Corefile"]
	for _, s := range []string{"kubernetes cluster.local in-addr.arpa ip6.arpa {", "pods insecure", "ttl 1", "ready :8181", "health :8080", "rcode NXDOMAIN", ":1053"} {
		if !strings.Contains(corefile, s) {
			t.Errorf("Corefile lacks %q:\n%s", s, corefile)
		}
	}
	for _, s := range []string{"auto", "forward", "/etc/resolv.conf"} {
		if strings.Contains(corefile, s) {
			t.Errorf("Corefile without withholding has %q:\n%s", s, corefile)
		}
	}

	// RBAC: the kubernetes plugin lists and watches these.
	for _, need := range []struct{ group, resource string }{
		{"", "services"}, {"", "pods"}, {"", "namespaces"}, {"discovery.k8s.io", "endpointslices"},
	} {
		if !slices.ContainsFunc(o.role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, need.group) && slices.Contains(r.Resources, need.resource) &&
				slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
		}) {
			t.Errorf("cluster role cannot list and watch %s.%s", need.resource, need.group)
		}
	}
	if o.binding.RoleRef.Name != o.role.Name || len(o.binding.Subjects) != 1 ||
		o.binding.Subjects[0].Name != o.sa.Name || o.binding.Subjects[0].Namespace != Namespace {
		t.Errorf("binding %+v", o.binding)
	}

	restricted(t, o.deploy)
}

// restricted checks the rules of the restricted Pod Security level that a pod can break.
func restricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", psc)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("host namespaces")
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
			(sc.Privileged != nil && *sc.Privileged) {
			t.Errorf("container %s security context %+v", c.Name, sc)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("container %s uses host port %d", c.Name, p.HostPort)
			}
		}
	}
}

func TestObjectsWithOptions(t *testing.T) {
	o := split(t, Objects(Options{
		Image: "bench.local/coredns:test", ClusterIP: "10.100.0.53", Domain: "bench.example",
		WithholdDir: "/tmp/bench-x/withheld", NodeSelector: map[string]string{"kubernetes.io/hostname": "n1"},
	}))
	if o.svc.Spec.ClusterIP != "10.100.0.53" {
		t.Errorf("clusterIP %s", o.svc.Spec.ClusterIP)
	}
	spec := o.deploy.Spec.Template.Spec
	c := spec.Containers[0]
	if c.Image != "bench.local/coredns:test" || spec.NodeSelector["kubernetes.io/hostname"] != "n1" {
		t.Errorf("image %s nodeSelector %v", c.Image, spec.NodeSelector)
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil })
	if i < 0 || spec.Volumes[i].HostPath.Path != "/tmp/bench-x/withheld" {
		t.Fatalf("no hostPath volume of the withhold directory: %+v", spec.Volumes)
	}
	name := spec.Volumes[i].Name
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == name && m.MountPath == withheldMount && m.ReadOnly
	}) {
		t.Errorf("withhold directory not mounted read-only at %s: %+v", withheldMount, c.VolumeMounts)
	}
	corefile := o.cm.Data["Corefile"]
	for _, s := range []string{
		"kubernetes bench.example in-addr.arpa ip6.arpa {",
		"directory " + withheldMount + " ",
		"forward . 127.0.0.1:1054",
		"bench.example:1054 in-addr.arpa:1054 ip6.arpa:1054 {",
		"bench.example:1053 in-addr.arpa:1053 ip6.arpa:1053 {",
	} {
		if !strings.Contains(corefile, s) {
			t.Errorf("Corefile lacks %q:\n%s", s, corefile)
		}
	}
}
