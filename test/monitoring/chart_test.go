package monitoring

import (
	"bytes"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"
)

// monitoringValues turns on the chart's monitoring objects.
func monitoringValues(extra map[string]any) map[string]any {
	v := map[string]any{
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"podMonitor":     map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
	}
	for k, x := range extra {
		v[k] = x
	}
	return v
}

// renderChart renders the install chart as `helm install etcd-operator -n
// etcd-operator-system` would, and returns its documents by kind.
func renderChart(t *testing.T, vals map[string]any) map[string][][]byte {
	t.Helper()
	ch, err := loader.Load(filepath.Join(root, operatorChartPath))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: "etcd-operator", Namespace: "etcd-operator-system", Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var names []string
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	byKind := map[string][][]byte{}
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(out[n], "\n---") {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			if head.Kind != "" {
				byKind[head.Kind] = append(byKind[head.Kind], []byte(doc))
			}
		}
	}
	return byKind
}

// TestChartRulesFileIsTheConfigOne keeps the chart's copy byte-equal to the source.
func TestChartRulesFileIsTheConfigOne(t *testing.T) {
	if !bytes.Equal(readFile(t, chartRulesFile), readFile(t, rulesFile)) {
		t.Errorf("%s differs from %s: cp %s %s", chartRulesFile, rulesFile, rulesFile, chartRulesFile)
	}
}

// TestChartRendersTheRules checks the rendered PrometheusRule carries exactly the rules
// of config/prometheus (their {{ $labels }} templates untouched by Helm), in the
// release namespace with the labels asked for.
func TestChartRendersTheRules(t *testing.T) {
	docs := renderChart(t, monitoringValues(nil))["PrometheusRule"]
	if len(docs) != 1 {
		t.Fatalf("rendered %d PrometheusRules, want 1", len(docs))
	}
	var got struct {
		prometheusRule
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	decodeStrict(t, "rendered PrometheusRule", docs[0], &got)
	want := loadRules(t)
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("the chart's rules differ from %s", rulesFile)
	}
	if got.Metadata.Namespace != "etcd-operator-system" || got.Metadata.Labels["release"] != "prom" || got.Metadata.Labels["app.kubernetes.io/instance"] != "etcd-operator" {
		t.Errorf("PrometheusRule metadata %+v: want the release namespace, release labels and prometheusRule.labels", got.Metadata)
	}
	if !strings.Contains(string(docs[0]), "{{ $labels.namespace }}") {
		t.Error("Helm rendered the rules' own templates")
	}
}

// TestChartMonitorsMatchConfig checks the chart's PodMonitors scrape what
// config/prometheus's do, with the same job names the rules select.
func TestChartMonitorsMatchConfig(t *testing.T) {
	docs := renderChart(t, monitoringValues(nil))["PodMonitor"]
	if len(docs) != 2 {
		t.Fatalf("rendered %d PodMonitors, want the operator's and the members'", len(docs))
	}
	byJob := map[string]podMonitor{}
	for _, d := range docs {
		var m podMonitor
		decodeStrict(t, "rendered PodMonitor", d, &m)
		byJob[jobOf(t, m)] = m
		if m.Metadata.Namespace != "etcd-operator-system" || m.Metadata.Labels["release"] != "prom" {
			t.Errorf("PodMonitor %s: namespace %q labels %v", m.Metadata.Name, m.Metadata.Namespace, m.Metadata.Labels)
		}
	}
	for job, file := range map[string]string{operatorJob: operatorMonitor, membersJob: membersMonitor} {
		want := loadMonitor(t, file)
		got, ok := byJob[job]
		if !ok {
			t.Errorf("no chart PodMonitor sets job %s", job)
			continue
		}
		if !reflect.DeepEqual(got.Spec.PodMetricsEndpoints, want.Spec.PodMetricsEndpoints) {
			t.Errorf("job %s: chart endpoints %+v, %s has %+v", job, got.Spec.PodMetricsEndpoints, file, want.Spec.PodMetricsEndpoints)
		}
		if !reflect.DeepEqual(got.Spec.NamespaceSelector, want.Spec.NamespaceSelector) {
			t.Errorf("job %s: chart namespaceSelector %+v, %s has %+v", job, got.Spec.NamespaceSelector, file, want.Spec.NamespaceSelector)
		}
	}
	if got, want := byJob[membersJob].Spec.Selector, loadMonitor(t, membersMonitor).Spec.Selector; !reflect.DeepEqual(got, want) {
		t.Errorf("members selector %+v, config %+v", got, want)
	}
	// The chart's operator pods carry its selector labels, not config/manager's.
	if got := byJob[operatorJob].Spec.Selector.MatchLabels; got["app.kubernetes.io/name"] != "etcd-operator" || got["app.kubernetes.io/instance"] != "etcd-operator" {
		t.Errorf("operator PodMonitor selects %v, want the release's pods", got)
	}

	// With watchNamespace, members are only looked for there.
	for _, d := range renderChart(t, monitoringValues(map[string]any{"watchNamespace": "team-a"}))["PodMonitor"] {
		var m podMonitor
		decodeStrict(t, "rendered PodMonitor", d, &m)
		if jobOf(t, m) == membersJob && (m.Spec.NamespaceSelector == nil || m.Spec.NamespaceSelector.Any || !reflect.DeepEqual(m.Spec.NamespaceSelector.MatchNames, []string{"team-a"})) {
			t.Errorf("with watchNamespace team-a the members PodMonitor selects namespaces %+v", m.Spec.NamespaceSelector)
		}
	}
}

// TestChartMonitoringIsOffByDefault: a plain cluster has no Prometheus Operator CRDs.
func TestChartMonitoringIsOffByDefault(t *testing.T) {
	docs := renderChart(t, nil)
	for _, kind := range []string{"PrometheusRule", "PodMonitor"} {
		if len(docs[kind]) != 0 {
			t.Errorf("the default install renders a %s", kind)
		}
	}
}

// TestChartLintsWithMonitoring runs Helm's linter with the monitoring objects on.
func TestChartLintsWithMonitoring(t *testing.T) {
	l := lint.All(filepath.Join(root, operatorChartPath), monitoringValues(nil), "etcd-operator-system", false)
	for _, m := range l.Messages {
		if m.Severity > support.InfoSev {
			t.Errorf("helm lint: %s", m.Error())
		}
	}
}

// jobOf returns the job name a PodMonitor's relabelings set.
func jobOf(t *testing.T, m podMonitor) string {
	t.Helper()
	if len(m.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("PodMonitor %s: want one endpoint, has %d", m.Metadata.Name, len(m.Spec.PodMetricsEndpoints))
	}
	for _, r := range m.Spec.PodMetricsEndpoints[0].Relabelings {
		if r.TargetLabel == "job" && len(r.SourceLabels) == 0 && (r.Action == "" || r.Action == "replace") {
			if r.Replacement == nil {
				return ""
			}
			return *r.Replacement
		}
	}
	t.Fatalf("PodMonitor %s sets no job name", m.Metadata.Name)
	return ""
}
