// Package monitoring checks the monitoring bundle: the alerting rules and PodMonitors in
// config/prometheus and the install chart, and the Grafana dashboard in config/grafana.
// Pure Go: queries are parsed as PromQL, and the metrics they name are looked up among
// those the operator and etcd register.
package monitoring

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/test/promtest"
)

// root is the repository root, relative to this package.
const root = "../.."

const (
	rulesFile         = "config/prometheus/rules.yaml"
	chartRulesFile    = "helm-charts/etcd-operator/files/prometheus-rules.yaml"
	operatorMonitor   = "config/prometheus/operator_podmonitor.yaml"
	membersMonitor    = "config/prometheus/etcd_podmonitor.yaml"
	dashboardFile     = "config/grafana/etcd-operator-dashboard.json"
	operatorChartPath = "helm-charts/etcd-operator"
)

// prometheusRule is the part of monitoring.coreos.com/v1 PrometheusRule the bundle uses;
// decoding is strict, so a misspelt field fails.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec ruleSpec `json:"spec"`
}

type ruleSpec struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// podMonitor is the PodMonitor part the generator for the e2e Prometheus decodes too
// (strict: a misspelt or untranslated field fails).
type podMonitor = promtest.PodMonitor

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeStrict decodes YAML or JSON into v, refusing unknown fields.
func decodeStrict(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func loadRules(t *testing.T) prometheusRule {
	t.Helper()
	var r prometheusRule
	loadMonitoringObject(t, rulesFile, "PrometheusRule", &r)
	return r
}

func loadMonitor(t *testing.T, rel string) podMonitor {
	t.Helper()
	var m podMonitor
	loadMonitoringObject(t, rel, "PodMonitor", &m)
	return m
}

// loadMonitoringObject decodes the file rel strictly into v; it must hold a
// monitoring.coreos.com/v1 object of kind.
func loadMonitoringObject(t *testing.T, rel, kind string, v any) {
	t.Helper()
	data := readFile(t, rel)
	decodeStrict(t, rel, data, v)
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	decodeLoose(t, data, &tm)
	if tm.APIVersion != "monitoring.coreos.com/v1" || tm.Kind != kind {
		t.Fatalf("%s is a %s %s, want a monitoring.coreos.com/v1 %s", rel, tm.APIVersion, tm.Kind, kind)
	}
}

// decodeLoose decodes YAML into v, ignoring fields v does not have.
func decodeLoose(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// splitYAML splits a multi-document YAML file.
func splitYAML(data []byte) [][]byte {
	var out [][]byte
	for _, doc := range strings.Split(string(data), "\n---") {
		out = append(out, []byte(doc))
	}
	return out
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
