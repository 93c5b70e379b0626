package monitoring

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// TestRuleQueriesArePromQLOnKnownMetrics parses every rule's expression as PromQL and
// checks the metrics, jobs and labels it uses exist.
func TestRuleQueriesArePromQLOnKnownMetrics(t *testing.T) {
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			for _, p := range checkQuery(t, r.Expr) {
				t.Errorf("group %s, rule %s%s: %s", g.Name, r.Alert, r.Record, p)
			}
		}
	}
}

// TestAlertsAreComplete checks what an on-call engineer relies on in every alert: a
// severity, a sensible for, and a summary and description that render with the labels
// the expression yields and name the namespace and cluster (or backup, or pod) it is
// about.
func TestAlertsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range loadRules(t).Spec.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules are required", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: rule %q is not an alert; the bundle holds alerts only", g.Name, r.Record)
				continue
			}
			name := r.Alert
			if !alertName.MatchString(name) || seen[name] {
				t.Errorf("alert %q: want a unique Etcd… CamelCase name", name)
			}
			seen[name] = true
			if sev := r.Labels["severity"]; sev != "critical" && sev != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", name, sev)
			}
			if d, err := time.ParseDuration(r.For); err != nil || d < time.Minute || d > 2*time.Hour {
				t.Errorf("%s: for %q, want between 1m and 2h (a blip must not page, an outage must)", name, r.For)
			}
			for k := range r.Annotations {
				if k != "summary" && k != "description" {
					t.Errorf("%s: unexpected annotation %q", name, k)
				}
			}
			e, err := parsePromQL(r.Expr)
			if err != nil {
				continue // reported by TestRuleQueriesArePromQLOnKnownMetrics
			}
			labels, known := outputLabels(e)
			if !known {
				t.Errorf("%s: cannot tell which labels the expression yields; aggregate with by (...)", name)
				continue
			}
			for _, key := range []string{"summary", "description"} {
				text := r.Annotations[key]
				if strings.TrimSpace(text) == "" {
					t.Errorf("%s: no %s", name, key)
					continue
				}
				if err := renderAlertTemplate(text, labels); err != nil {
					t.Errorf("%s: %s: %v", name, key, err)
				}
				for _, l := range labels {
					if identifying[l] && !strings.Contains(text, "$labels."+l) {
						t.Errorf("%s: %s does not name the %s ({{ $labels.%s }})", name, key, l, l)
					}
				}
			}
			if len(strings.TrimSpace(r.Annotations["description"])) < 200 {
				t.Errorf("%s: the description should say what to check, not only what happened", name)
			}
		}
	}
}

// The bundle's alerts for issue #16's list, and issue #14's "backup not verified".
func TestRequiredAlertsExist(t *testing.T) {
	var names []string
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
		}
	}
	for _, want := range []string{
		"EtcdClusterUnavailable", "EtcdClusterQuorumLost", "EtcdClusterNoLeader",
		"EtcdClusterMembersNotReady", "EtcdBackupTooOld", "EtcdBackupFailing", "EtcdBackupNotVerified",
		"EtcdDatabaseNearQuota", "EtcdClusterNotReconciled", "EtcdOperatorDown",
		"EtcdCertificateExpiringSoon", "EtcdCertificateExpired",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

var alertName = regexp.MustCompile(`^Etcd[A-Z][A-Za-z0-9]+$`)

// identifying labels say which object an alert is about; a summary and description
// must name each one the alert carries.
var identifying = setOf("namespace", "cluster", "backup", "pod")

// renderAlertTemplate renders an annotation the way Prometheus does (text/template,
// with $labels, $value and Prometheus's humanize functions), with every label the
// expression yields set; a label it does not yield is an error.
func renderAlertTemplate(text string, labels []string) error {
	const defs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	num := func(v any) string { return fmt.Sprint(v) }
	funcs := template.FuncMap{
		"humanize": num, "humanize1024": num, "humanizeDuration": num,
		"humanizePercentage": num, "humanizeTimestamp": num,
		"toUpper": strings.ToUpper, "toLower": strings.ToLower, "title": strings.ToTitle,
	}
	tmpl, err := template.New("annotation").Option("missingkey=error").Funcs(funcs).Parse(defs + text)
	if err != nil {
		return err
	}
	data := struct {
		Labels, ExternalLabels map[string]string
		ExternalURL            string
		Value                  float64
	}{Labels: map[string]string{}, ExternalLabels: map[string]string{}, Value: 0.5}
	for _, l := range labels {
		data.Labels[l] = "x"
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, data); err != nil {
		return fmt.Errorf("%v (the expression yields labels %v)", err, labels)
	}
	return nil
}

// TestBackupReasonIsTheOperators: the backup rules tell success from failure by the
// reason the operator records for a stored backup.
func TestBackupReasonIsTheOperators(t *testing.T) {
	found := false
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			e, err := parsePromQL(r.Expr)
			if err != nil {
				continue
			}
			for _, s := range selectors(e) {
				for _, f := range s.filters {
					if s.name == "etcd_operator_backups_total" && f.Label == "reason" {
						found = true
						if f.Value != etcdv1beta2.ReasonBackupSucceeded || f.IsRegexp {
							t.Errorf("%s: reason %q, the operator records %q for a stored backup", r.Alert, f.Value, etcdv1beta2.ReasonBackupSucceeded)
						}
					}
				}
			}
		}
	}
	if !found {
		t.Error("no rule tells failed backups by their reason")
	}
}

// TestBackupAlertsLeaveSkippedBackupsAlone: a backup whose cluster is hibernated is
// skipped, not attempted, and its last success ages on purpose; the alerts about failing
// and old backups must each end in "unless" the skipped gauge is 1 for that backup.
func TestBackupAlertsLeaveSkippedBackupsAlone(t *testing.T) {
	want := map[string]bool{"EtcdBackupFailing": false, "EtcdBackupTooOld": false}
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			if _, ok := want[r.Alert]; !ok {
				continue
			}
			want[r.Alert] = true
			e, err := parsePromQL(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Alert, err)
			}
			b, ok := e.(*metricsql.BinaryOpExpr)
			if !ok || strings.ToLower(b.Op) != "unless" {
				t.Errorf("%s: the expression is not \"... unless <skipped>\"", r.Alert)
				continue
			}
			skipped := false
			for _, s := range selectors(b.Right) {
				skipped = skipped || s.name == "etcd_operator_backup_skipped"
			}
			on := b.GroupModifier.Args
			if !skipped || strings.ToLower(b.GroupModifier.Op) != "on" || !slices.Contains(on, "namespace") || !slices.Contains(on, "backup") {
				t.Errorf("%s: its last \"unless\" is not on (namespace, backup) etcd_operator_backup_skipped: %s", r.Alert, b.AppendString(nil))
			}
			if c, ok := b.Right.(*metricsql.BinaryOpExpr); !ok || c.Op != "==" {
				t.Errorf("%s: the skipped gauge is not compared (== 1): a backup that is no longer skipped (0) would stay silenced", r.Alert)
			}
		}
	}
	for a, found := range want {
		if !found {
			t.Errorf("alert %s missing", a)
		}
	}
}
