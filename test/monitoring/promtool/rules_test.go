// Package promtool runs Prometheus' own promtool over the shipped alerting rules: `check
// rules` over every rule file the project ships, and `test rules` with the unit tests in
// testdata (one file per rule group, a firing and a silent case for every alert). It
// needs promtool from the tool cache (hack/tools.sh promtool): integration tier.
package promtool

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/test/promtest"
)

const root = "../../.."

// shippedRules are the PrometheusRule files users install (the chart's is a byte copy of
// the kustomize one; both are checked, as either may be what a user runs).
var shippedRules = []string{
	"config/prometheus/rules.yaml",
	"helm-charts/etcd-operator/files/prometheus-rules.yaml",
}

func ruleFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	rf, err := promtest.RuleFile(b)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return rf
}

// TestShippedRulesPassPromtoolCheck: promtool parses every expression, label and
// annotation template as the Prometheus server would load them, and lints them.
func TestShippedRulesPassPromtoolCheck(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range shippedRules {
		p := promtest.WriteFile(t, dir, strings.ReplaceAll(rel, "/", "_"), ruleFile(t, rel))
		out, err := promtest.Run(t, dir, "check", "rules", "--lint=all", "--lint-fatal", p)
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", rel, err, out)
		} else if !strings.Contains(out, "SUCCESS") {
			t.Errorf("promtool check rules %s: no SUCCESS in\n%s", rel, out)
		}
	}
}

// TestShippedRulesPassPromtoolUnitTests runs testdata/*.test.yaml against the shipped
// rules with their shipped for durations.
func TestShippedRulesPassPromtoolUnitTests(t *testing.T) {
	dir := t.TempDir()
	rules, err := promtest.WithoutAnnotations(ruleFile(t, shippedRules[0]))
	if err != nil {
		t.Fatal(err)
	}
	promtest.WriteFile(t, dir, "rules.yaml", rules)
	tests, err := filepath.Glob("testdata/*.test.yaml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no testdata/*.test.yaml (%v)", err)
	}
	args := []string{"test", "rules"}
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Base(promtest.WriteFile(t, dir, filepath.Base(f), b)))
	}
	out, err := promtest.Run(t, dir, args...)
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

// unitTests is the part of a promtool test file the coverage check reads.
type unitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestEveryAlertHasAFiringAndASilentCase: each rule group has a test file of its own
// name, and each alert of the group has a case expecting it to fire and one expecting
// silence in that file, so a new alert cannot ship untested.
func TestEveryAlertHasAFiringAndASilentCase(t *testing.T) {
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(ruleFile(t, shippedRules[0]), &rules); err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, g := range rules.Groups {
		groups = append(groups, g.Name)
		b, err := os.ReadFile(filepath.Join("testdata", g.Name+".test.yaml"))
		if err != nil {
			t.Errorf("group %s: %v", g.Name, err)
			continue
		}
		var ut unitTests
		if err := yaml.Unmarshal(b, &ut); err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		if !slices.Equal(ut.RuleFiles, []string{"rules.yaml"}) {
			t.Errorf("%s.test.yaml: rule_files %v, want [rules.yaml] (the test writes the shipped rules there)", g.Name, ut.RuleFiles)
		}
		firing, silent := map[string]bool{}, map[string]bool{}
		for _, tc := range ut.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
		for _, r := range g.Rules {
			if !firing[r.Alert] {
				t.Errorf("%s.test.yaml: no case where %s fires", g.Name, r.Alert)
			}
			if !silent[r.Alert] {
				t.Errorf("%s.test.yaml: no case where %s stays silent", g.Name, r.Alert)
			}
			delete(firing, r.Alert)
			delete(silent, r.Alert)
		}
		for a := range firing {
			t.Errorf("%s.test.yaml: tests %s, which is not an alert of group %s", g.Name, a, g.Name)
		}
		for a := range silent {
			t.Errorf("%s.test.yaml: tests %s, which is not an alert of group %s", g.Name, a, g.Name)
		}
	}
	files, _ := filepath.Glob("testdata/*.test.yaml")
	for _, f := range files {
		if g := strings.TrimSuffix(filepath.Base(f), ".test.yaml"); !slices.Contains(groups, g) {
			t.Errorf("%s: no rule group %s", f, g)
		}
	}
}
