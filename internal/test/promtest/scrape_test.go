package promtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const root = "../../.."

// shippedMonitors reads the PodMonitors of config/prometheus with the namespace its
// kustomization gives them.
func shippedMonitors(t *testing.T) []PodMonitor {
	t.Helper()
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(root, "config/prometheus/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &k); err != nil || k.Namespace == "" {
		t.Fatalf("config/prometheus/kustomization.yaml: namespace %q, %v", k.Namespace, err)
	}
	var out []PodMonitor
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(root, "config/prometheus", r))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "kind: PodMonitor") {
			continue
		}
		var withNS map[string]any
		if err := yaml.Unmarshal(b, &withNS); err != nil {
			t.Fatal(err)
		}
		withNS["metadata"].(map[string]any)["namespace"] = k.Namespace
		b, _ = yaml.Marshal(withNS)
		m, err := DecodePodMonitor(b)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		out = append(out, m)
	}
	if len(out) != 2 {
		t.Fatalf("config/prometheus has %d PodMonitors, want the operator's and the members'", len(out))
	}
	return out
}

// pod is what Kubernetes pod discovery knows of one container port of a pod.
type pod struct {
	namespace, name, container, port, phase string
	labels                                  map[string]string
}

// targetLabels are the labels discovery gives the pod's port before relabeling.
func (p pod) targetLabels() map[string]string {
	l := map[string]string{
		"__meta_kubernetes_namespace":               p.namespace,
		"__meta_kubernetes_pod_name":                p.name,
		"__meta_kubernetes_pod_container_name":      p.container,
		"__meta_kubernetes_pod_container_port_name": p.port,
		"__meta_kubernetes_pod_phase":               p.phase,
		"job":                                       "from-the-scrape-config",
	}
	for k, v := range p.labels {
		l[sdLabel("__meta_kubernetes_pod_label_", k)] = v
		l[sdLabel("__meta_kubernetes_pod_labelpresent_", k)] = "true"
	}
	return l
}

// relabel applies keep, drop and replace as Prometheus does (regexes fully anchored,
// source values joined by ";"); it returns nil when the target is dropped.
func relabel(t *testing.T, in map[string]string, rcs []RelabelConfig) map[string]string {
	t.Helper()
	l := map[string]string{}
	for k, v := range in {
		l[k] = v
	}
	for _, rc := range rcs {
		sep := rc.Separator
		if sep == "" {
			sep = ";"
		}
		vals := make([]string, len(rc.SourceLabels))
		for i, s := range rc.SourceLabels {
			vals[i] = l[s]
		}
		val := strings.Join(vals, sep)
		expr := rc.Regex
		if expr == "" {
			expr = "(.*)"
		}
		re := regexp.MustCompile("^(?:" + expr + ")$")
		switch rc.Action {
		case "keep":
			if !re.MatchString(val) {
				return nil
			}
		case "drop":
			if re.MatchString(val) {
				return nil
			}
		case "", "replace":
			repl := "$1"
			if rc.Replacement != nil {
				repl = *rc.Replacement
			}
			if m := re.FindStringSubmatchIndex(val); m != nil {
				if v := string(re.ExpandString(nil, repl, val, m)); v != "" {
					l[rc.TargetLabel] = v
				} else {
					delete(l, rc.TargetLabel)
				}
			}
		default:
			t.Fatalf("relabel action %q is not simulated here", rc.Action)
		}
	}
	return l
}

// TestScrapeConfigsSelectWhatThePodMonitorsSelect: over pods in and out of each
// monitor's namespaces, with and without its labels and port, the generated scrape
// configuration keeps exactly the pods Kubernetes' own selector matches (and running),
// and labels them as the rules expect (job, and for members cluster, namespace, pod).
func TestScrapeConfigsSelectWhatThePodMonitorsSelect(t *testing.T) {
	mons := shippedMonitors(t)
	scrapes, err := ScrapeConfigs(mons, ScrapeOptions{Secret: func(ns, name, key string) (string, error) {
		return "token-of-" + ns + "/" + name + "/" + key, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	pods := []pod{
		{"default", "c-abc", "etcd", "metrics", "Running", map[string]string{"app": "etcd", "etcd_cluster": "c"}},
		{"tenant", "d-xyz", "etcd", "metrics", "Running", map[string]string{"app": "etcd", "etcd_cluster": "d"}},
		{"default", "c-abc", "etcd", "client", "Running", map[string]string{"app": "etcd", "etcd_cluster": "c"}},
		{"default", "c-old", "etcd", "metrics", "Succeeded", map[string]string{"app": "etcd", "etcd_cluster": "c"}},
		{"kube-system", "etcd-node", "etcd", "metrics", "Running", map[string]string{"app": "etcd"}},
		{"default", "other", "x", "metrics", "Running", map[string]string{"app": "etcdx", "etcd_cluster": "c"}},
		{"etcd-operator-system", "op-1", "manager", "metrics", "Running", map[string]string{"control-plane": "etcd-operator"}},
		{"etcd-operator-system", "op-1", "manager", "webhook", "Running", map[string]string{"control-plane": "etcd-operator"}},
		{"elsewhere", "op-2", "manager", "metrics", "Running", map[string]string{"control-plane": "etcd-operator"}},
	}
	for i, m := range mons {
		sc := scrapes[i]
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(m))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			inNS := m.Spec.NamespaceSelector != nil && m.Spec.NamespaceSelector.Any || p.namespace == m.Metadata.Namespace
			want := inNS && sel.Matches(labels.Set(p.labels)) && p.port == m.Spec.PodMetricsEndpoints[0].Port && p.phase == "Running"
			// Discovery limits the namespaces; relabeling does the rest.
			discovered := sc.KubernetesSDConfigs[0].Namespaces == nil
			if !discovered {
				for _, n := range sc.KubernetesSDConfigs[0].Namespaces.Names {
					discovered = discovered || n == p.namespace
				}
			}
			var got map[string]string
			if discovered {
				got = relabel(t, p.targetLabels(), sc.RelabelConfigs)
			}
			if (got != nil) != want {
				t.Errorf("%s: pod %s/%s port %s labels %v: scraped %v, PodMonitor selects it: %v", sc.JobName, p.namespace, p.name, p.port, p.labels, got != nil, want)
				continue
			}
			if got == nil {
				continue
			}
			wantJob := map[string]string{"etcd-operator-members": "etcd-operator-members", "etcd-operator": "etcd-operator"}[m.Metadata.Name]
			if got["job"] != wantJob || got["namespace"] != p.namespace || got["pod"] != p.name {
				t.Errorf("%s: pod %s/%s labelled job=%q namespace=%q pod=%q", sc.JobName, p.namespace, p.name, got["job"], got["namespace"], got["pod"])
			}
			if m.Metadata.Name == "etcd-operator-members" && got["cluster"] != p.labels["etcd_cluster"] {
				t.Errorf("%s: pod %s/%s labelled cluster=%q, want %q", sc.JobName, p.namespace, p.name, got["cluster"], p.labels["etcd_cluster"])
			}
		}
		ep := m.Spec.PodMetricsEndpoints[0]
		wantScheme := ep.Scheme
		if wantScheme == "" {
			wantScheme = "http"
		}
		if sc.Scheme != wantScheme || sc.MetricsPath != ep.Path || sc.HonorLabels != ep.HonorLabels ||
			(ep.TLSConfig != nil) != (sc.TLSConfig != nil) || (ep.TLSConfig != nil && ep.TLSConfig.InsecureSkipVerify != sc.TLSConfig.InsecureSkipVerify) {
			t.Errorf("%s: scheme %s path %s honor %v tls %+v; the PodMonitor says %s %s %v %+v", sc.JobName, sc.Scheme, sc.MetricsPath, sc.HonorLabels, sc.TLSConfig, ep.Scheme, ep.Path, ep.HonorLabels, ep.TLSConfig)
		}
		if a := ep.Authorization; a != nil {
			want := fmt.Sprintf("token-of-%s/%s/%s", m.Metadata.Namespace, a.Credentials.Name, a.Credentials.Key)
			if sc.Authorization == nil || sc.Authorization.Type != a.Type || sc.Authorization.Credentials != want {
				t.Errorf("%s: authorization %+v, want %s with the Secret's value", sc.JobName, sc.Authorization, a.Type)
			}
		} else if sc.Authorization != nil {
			t.Errorf("%s: authorization the PodMonitor does not ask for", sc.JobName)
		}
	}
}

func selectorOf(m PodMonitor) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: m.Spec.Selector.MatchLabels}
	for _, e := range m.Spec.Selector.MatchExpressions {
		s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
	}
	return s
}

// TestGeneratedConfigPassesPromtoolCheck: Prometheus accepts the generated configuration
// with the shipped rules.
func TestGeneratedConfigPassesPromtoolCheck(t *testing.T) {
	scrapes, err := ScrapeConfigs(shippedMonitors(t), ScrapeOptions{KubeconfigFile: "kubeconfig", ScrapeInterval: "2s",
		Secret: func(_, _, _ string) (string, error) { return "a-token", nil }})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(root, "config/prometheus/rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := RuleFile(b)
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, dir, "rules.yaml", rules)
	WriteFile(t, dir, "kubeconfig", []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"))
	cfg, err := Config(scrapes, []string{"rules.yaml"}, "2s")
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, dir, "prometheus.yml", cfg)
	out, err := Run(t, dir, "check", "config", "prometheus.yml")
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, cfg)
	}
}

// TestWithForAtMost caps long for durations and keeps short ones.
func TestWithForAtMost(t *testing.T) {
	in := []byte("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    for: 1h\n  - alert: B\n    expr: up == 0\n    for: 5s\n  - alert: C\n    expr: up == 0\n    for: 2d\n")
	out, err := WithForAtMost(in, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "for: 10s"); got != 2 || !strings.Contains(string(out), "for: 5s") {
		t.Errorf("got\n%s", out)
	}
}
