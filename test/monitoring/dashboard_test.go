package monitoring

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard model the checks read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(readFile(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// grafanaVars are Grafana's interval variables, which are not PromQL until Grafana
// substitutes them; queries are parsed with a value in their place.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// TestDashboardQueriesArePromQLOnKnownMetrics parses every panel query and template
// variable query and checks the metrics, jobs and labels they use exist.
func TestDashboardQueriesArePromQLOnKnownMetrics(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q: both are needed to provision it", d.UID, d.Title)
	}
	ids := map[int]bool{}
	queries := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: grid position %+v", p.Title, p.GridPos)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				queries++
				for _, problem := range checkQuery(t, grafanaVars.Replace(q.Expr)) {
					t.Errorf("panel %q, query %s: %s", p.Title, q.RefID, problem)
				}
			}
		}
	}
	walk(d.Panels)
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		s, _ := q.(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, s)
			continue
		}
		// The label must be one the selected series have: group by it to check.
		for _, problem := range checkQuery(t, "count by ("+m[2]+") ("+m[1]+")") {
			t.Errorf("variable %s: %s", v.Name, problem)
		}
	}
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// TestDashboardCoversTheBundle checks the dashboard has what an SRE looks for next to
// the alerts: members and availability, leader, database size against quota, backups
// (age, size, duration) and the operator's steps.
func TestDashboardCoversTheBundle(t *testing.T) {
	var all strings.Builder
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, q := range p.Targets {
				all.WriteString(q.Expr + "\n")
			}
			walk(p.Panels)
		}
	}
	walk(loadDashboard(t).Panels)
	for _, m := range []string{
		"etcd_operator_cluster_available", "etcd_operator_cluster_members", "etcd_server_has_leader",
		"etcd_mvcc_db_total_size_in_bytes", "etcd_server_quota_backend_bytes",
		"etcd_operator_backup_last_success_timestamp_seconds", "etcd_operator_backup_size_bytes",
		"etcd_operator_backup_duration_seconds_bucket", "etcd_operator_backups_total",
		"etcd_operator_actions_total", "etcd_operator_etcdadmin_requests_total",
		"etcd_operator_certificate_expiry_seconds",
	} {
		if !strings.Contains(all.String(), m) {
			t.Errorf("no panel shows %s", m)
		}
	}
}
