package monitoring

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// TestMembersMonitorScrapesMemberPods renders a member pod as the operator does and
// checks the members PodMonitor selects it, scrapes a port it serves /metrics on, and
// takes the cluster label from the pod label that names the EtcdCluster.
func TestMembersMonitorScrapesMemberPods(t *testing.T) {
	m := loadMonitor(t, membersMonitor)
	if jobOf(t, m) != membersJob {
		t.Errorf("members job %q, the rules select %q", jobOf(t, m), membersJob)
	}
	if m.Spec.NamespaceSelector == nil || !m.Spec.NamespaceSelector.Any {
		t.Errorf("members PodMonitor must look in every namespace (EtcdClusters live anywhere), has %+v", m.Spec.NamespaceSelector)
	}
	pod := renderMemberPod(t)
	sel := podSelector(t, m)
	if !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("selector %s does not select member pod labels %v", sel, pod.Labels)
	}
	if sel.Matches(labels.Set{render.LabelApp: render.AppName}) {
		t.Errorf("selector %s also selects pods without %s (not members)", sel, render.LabelCluster)
	}
	ep := m.Spec.PodMetricsEndpoints[0]
	port := containerPort(pod, render.ContainerName, ep.Port)
	if port == nil || port.ContainerPort != render.MetricsPort {
		t.Errorf("endpoint port %q is not the etcd container's metrics port %d (ports %+v)", ep.Port, render.MetricsPort, pod.Spec.Containers)
	}
	for _, p := range []*corev1.Probe{pod.Spec.Containers[0].ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTP || p.HTTPGet.Port != intstr.FromInt32(render.MetricsPort) {
			t.Errorf("the readiness probe %+v no longer shows the metrics port serves plain HTTP", p)
		}
	}
	if ep.Path != "/metrics" {
		t.Errorf("path %q", ep.Path)
	}
	clusterFrom := ""
	for _, r := range ep.Relabelings {
		if r.TargetLabel == "cluster" && len(r.SourceLabels) == 1 {
			clusterFrom = r.SourceLabels[0]
		}
	}
	if want := "__meta_kubernetes_pod_label_" + render.LabelCluster; clusterFrom != want {
		t.Errorf("label cluster comes from %q, want %q (the pod label naming the EtcdCluster)", clusterFrom, want)
	}
}

// TestOperatorMonitorScrapesTheManager checks the operator PodMonitor selects
// config/manager's pods, on the port the manager serves metrics on, and keeps the
// operator's namespace label (the EtcdCluster's) over the target's.
func TestOperatorMonitorScrapesTheManager(t *testing.T) {
	m := loadMonitor(t, operatorMonitor)
	if jobOf(t, m) != operatorJob {
		t.Errorf("operator job %q, the rules select %q", jobOf(t, m), operatorJob)
	}
	var dep appsv1.Deployment
	for _, doc := range splitYAML(readFile(t, "config/manager/manager.yaml")) {
		var head metav1.TypeMeta
		decodeLoose(t, doc, &head)
		if head.Kind == "Deployment" {
			decodeLoose(t, doc, &dep)
		}
	}
	if !podSelector(t, m).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("operator PodMonitor does not select config/manager's pods %v", dep.Spec.Template.Labels)
	}
	pod := corev1.Pod{Spec: dep.Spec.Template.Spec}
	ep := m.Spec.PodMetricsEndpoints[0]
	port := containerPort(&pod, "manager", ep.Port)
	if port == nil || !slices.Contains(pod.Spec.Containers[0].Args, "--metrics-bind-address=:"+itoa(port.ContainerPort)) {
		t.Errorf("port %q is not where the manager serves metrics (args %q)", ep.Port, pod.Spec.Containers[0].Args)
	}
	if !ep.HonorLabels {
		t.Error("honorLabels must be true: the operator's series name the EtcdCluster's namespace in label namespace")
	}
	// The manager serves metrics over HTTPS to authorised callers only: the monitor
	// must speak HTTPS and present a token that metrics_reader.yaml grants get on /metrics.
	if slices.Contains(pod.Spec.Containers[0].Args, "--metrics-secure=false") {
		t.Errorf("config/manager serves plain metrics: %q", pod.Spec.Containers[0].Args)
	}
	if ep.Scheme != "https" || ep.Authorization == nil || ep.Authorization.Type != "Bearer" {
		t.Fatalf("operator endpoint scheme %q authorization %+v: want https with a bearer token", ep.Scheme, ep.Authorization)
	}
	checkMetricsReader(t, ep.Authorization.Credentials.Name, ep.Authorization.Credentials.Key)
}

// checkMetricsReader: config/prometheus/metrics_reader.yaml has the token Secret the
// monitor names, of a ServiceAccount bound to a ClusterRole allowing get on /metrics.
func checkMetricsReader(t *testing.T, secret, key string) {
	t.Helper()
	var (
		tokenOf, boundSA, role string
		allowsMetrics          = map[string]bool{}
	)
	for _, doc := range splitYAML(readFile(t, "config/prometheus/metrics_reader.yaml")) {
		var o struct {
			Kind     string `json:"kind"`
			Type     string `json:"type"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Rules []struct {
				NonResourceURLs []string `json:"nonResourceURLs"`
				Verbs           []string `json:"verbs"`
			} `json:"rules"`
			RoleRef  struct{ Name string } `json:"roleRef"`
			Subjects []struct{ Kind, Name string }
		}
		decodeLoose(t, doc, &o)
		switch o.Kind {
		case "Secret":
			if o.Metadata.Name == secret && o.Type == "kubernetes.io/service-account-token" && key == "token" {
				tokenOf = o.Metadata.Annotations["kubernetes.io/service-account.name"]
			}
		case "ClusterRole":
			for _, r := range o.Rules {
				if slices.Contains(r.NonResourceURLs, "/metrics") && slices.Contains(r.Verbs, "get") {
					allowsMetrics[o.Metadata.Name] = true
				}
			}
		case "ClusterRoleBinding":
			for _, s := range o.Subjects {
				if s.Kind == "ServiceAccount" {
					boundSA, role = s.Name, o.RoleRef.Name
				}
			}
		}
	}
	if tokenOf == "" || tokenOf != boundSA || !allowsMetrics[role] {
		t.Errorf("Secret %s (key %s) is a token of %q; %q is bound to %q, which allows get /metrics: %v", secret, key, tokenOf, boundSA, role, allowsMetrics[role])
	}
}

func renderMemberPod(t *testing.T) *corev1.Pod {
	t.Helper()
	r, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "team-a", UID: "uid-1"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 1, Version: etcdv1beta2.DefaultVersion},
	}
	member := "example-0"
	objs, err := r.Render(render.Input{Cluster: c, Members: []render.Member{{
		Name: member, InitialClusterState: render.StateNew, InitialCluster: render.InitialCluster(c, []string{member}, ""),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			return p
		}
	}
	t.Fatal("no member pod rendered")
	return nil
}

func podSelector(t *testing.T, m podMonitor) labels.Selector {
	t.Helper()
	ls := &metav1.LabelSelector{MatchLabels: m.Spec.Selector.MatchLabels}
	for _, e := range m.Spec.Selector.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values,
		})
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatalf("PodMonitor %s selector: %v", m.Metadata.Name, err)
	}
	return sel
}

func containerPort(p *corev1.Pod, container, name string) *corev1.ContainerPort {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for i := range c.Ports {
			if c.Ports[i].Name == name {
				return &c.Ports[i]
			}
		}
	}
	return nil
}
