// Package promtest runs the shipped monitoring bundle on a real Prometheus: it finds the
// promtool and prometheus binaries hack/tools.sh caches, turns the PrometheusRule into
// the rule file Prometheus loads, turns the PodMonitors into the scrape configuration the
// Prometheus Operator would generate from them (scrape.go), and runs a server (server.go).
package promtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// Version of github.com/prometheus/prometheus hack/tools.sh builds promtool and
// prometheus from (module v0.3XX.Y is Prometheus 3.XX.Y).
const Version = "v0.316.0"

// Promtool returns the cached promtool; a missing one skips the test, or fails it under CI.
func Promtool(t testing.TB) string {
	t.Helper()
	return testenv.Require(t, filepath.Join("promtool-"+Version, "promtool"))
}

// Prometheus returns the cached prometheus server; missing: as Promtool.
func Prometheus(t testing.TB) string {
	t.Helper()
	return testenv.Require(t, filepath.Join("prometheus-"+Version, "prometheus"))
}

// RuleFile converts a monitoring.coreos.com/v1 PrometheusRule (YAML) into the rule file
// Prometheus and promtool read: its spec, which is {groups: [...]}, unchanged. Every field
// is kept (decoded into maps), so promtool judges exactly what was shipped.
func RuleFile(prometheusRule []byte) ([]byte, error) {
	var obj struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Spec       map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(prometheusRule, &obj); err != nil {
		return nil, err
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("a %s %s, not a monitoring.coreos.com/v1 PrometheusRule", obj.APIVersion, obj.Kind)
	}
	if _, ok := obj.Spec["groups"]; !ok || len(obj.Spec) != 1 {
		return nil, fmt.Errorf("spec must hold groups only, has %d fields", len(obj.Spec))
	}
	return yaml.Marshal(obj.Spec)
}

// EditRules applies edit to every rule (a map of the rule's fields) of a rule file.
func EditRules(ruleFile []byte, edit func(rule map[string]any)) ([]byte, error) {
	var f struct {
		Groups []struct {
			Name     string           `json:"name"`
			Interval string           `json:"interval,omitempty"`
			Rules    []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(ruleFile, &f); err != nil {
		return nil, err
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			edit(r)
		}
	}
	return yaml.Marshal(f)
}

// WithoutAnnotations drops the rules' annotations: promtool's unit tests compare an
// alert's annotations in full, and the descriptions are paragraphs for people (their
// templates are parsed by `promtool check rules` and rendered by test/monitoring).
func WithoutAnnotations(ruleFile []byte) ([]byte, error) {
	return EditRules(ruleFile, func(r map[string]any) { delete(r, "annotations") })
}

// WithForAtMost caps every alert's for at max. The bench proves each alert fires and
// resolves from the faults it is about; waiting out the shipped for (up to hours) would
// prove nothing more, and promtool's unit tests check the shipped for itself.
func WithForAtMost(ruleFile []byte, max time.Duration) ([]byte, error) {
	var err error
	out, e := EditRules(ruleFile, func(r map[string]any) {
		s, ok := r["for"].(string)
		if !ok {
			return
		}
		d, perr := parseDuration(s)
		if perr != nil {
			err = fmt.Errorf("alert %v: for %q: %v", r["alert"], s, perr)
			return
		}
		if d > max {
			r["for"] = max.String()
		}
	})
	if e != nil {
		return nil, e
	}
	return out, err
}

// parseDuration reads a Prometheus duration: Go's units plus d, w and y.
func parseDuration(s string) (time.Duration, error) {
	for suffix, mult := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok && !strings.ContainsAny(n, "hmsµn") {
			var v int
			if _, err := fmt.Sscanf(n, "%d", &v); err != nil {
				return 0, err
			}
			return time.Duration(v) * mult, nil
		}
	}
	return time.ParseDuration(s)
}

// Run runs promtool with args in dir and returns its combined output.
func Run(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// WriteFile writes data to dir/name and returns the path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
