package monitoring

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// The operator's controllers register their metrics with controller-runtime's
	// registry when imported, as in the manager.
	_ "github.com/etcd-operator/etcd-operator/controllers/etcdbackup"
	_ "github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"

	// etcd's server packages register etcd's own metrics with the default registry
	// when imported: the etcd version in go.mod, whose names members export.
	_ "go.etcd.io/etcd/server/v3/etcdserver"
	_ "go.etcd.io/etcd/server/v3/etcdserver/api/rafthttp"
	_ "go.etcd.io/etcd/server/v3/storage"
	_ "go.etcd.io/etcd/server/v3/storage/backend"
	_ "go.etcd.io/etcd/server/v3/storage/mvcc"
	_ "go.etcd.io/etcd/server/v3/storage/wal"
)

// The scrape jobs the monitors set (relabelings) and the rules select.
const (
	operatorJob = "etcd-operator"
	membersJob  = "etcd-operator-members"
)

// Target labels Prometheus adds to every series of a PodMonitor's targets; the member
// monitor adds cluster (from the pod's etcd_cluster label).
var (
	targetLabels       = setOf("job", "instance", "namespace", "pod", "container", "endpoint")
	memberTargetLabels = setOf("job", "instance", "namespace", "pod", "container", "endpoint", "cluster")
)

// metric is what the tests know of a series name a query uses.
type metric struct {
	job string
	// labels are the series' labels, target labels included; nil when unknown (metrics
	// of controller-runtime), and then a query's labels on it are not checked.
	labels map[string]bool
}

// knownMetric looks up a series name (histogram suffixes included) among the metrics
// the operator registers with controller-runtime's registry (the registry its /metrics
// serves), the ones etcd registers, and Prometheus's own "up".
func knownMetric(t *testing.T, name string) (metric, error) {
	t.Helper()
	c := catalogue(t)
	if name == "up" {
		return metric{labels: nil}, nil // either job; the selector's job decides
	}
	base, suffix := name, ""
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, s); ok && c.histograms[b] {
			base, suffix = b, s
		}
	}
	switch {
	case c.operatorLabels[base] != nil:
		if !registered(metrics.Registry, base) && !registered(c.etcdadminRegistry, base) {
			return metric{}, fmt.Errorf("%s is declared in the operator's metrics.go files but not registered", base)
		}
		labels := map[string]bool{}
		for l := range targetLabels {
			labels[l] = true
		}
		for l := range c.operatorLabels[base] {
			labels[l] = true
		}
		if suffix == "_bucket" {
			labels["le"] = true
		}
		return metric{job: operatorJob, labels: labels}, nil
	case strings.HasPrefix(base, "etcd_operator_"):
		return metric{}, fmt.Errorf("%s: the operator declares no such metric", name)
	case registered(metrics.Registry, name) || suffixed(name, func(b string) bool { return registered(metrics.Registry, b) }):
		return metric{job: operatorJob}, nil // controller-runtime's own
	case registered(prometheus.DefaultRegisterer, name) || suffixed(name, func(b string) bool { return registered(prometheus.DefaultRegisterer, b) }):
		labels := map[string]bool{}
		for l := range memberTargetLabels {
			labels[l] = true
		}
		if strings.HasSuffix(name, "_bucket") {
			labels["le"] = true
		}
		return metric{job: membersJob, labels: labels}, nil
	}
	return metric{}, fmt.Errorf("%s is registered neither by the operator nor by etcd (go.mod's version)", name)
}

// suffixed reports whether name is a histogram's _bucket, _sum or _count series of a
// metric for which ok holds.
func suffixed(name string, ok func(string) bool) bool {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, cut := strings.CutSuffix(name, s); cut && ok(b) {
			return true
		}
	}
	return false
}

// registered reports whether reg holds a collector of the given fully-qualified name:
// registering a probe of that name fails exactly then (a different help or label set
// conflicts with it). A Vec with no series yet is found too, which Gather would miss.
func registered(reg prometheus.Registerer, name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe of test/monitoring"})
	if err := reg.Register(probe); err != nil {
		return true
	}
	reg.Unregister(probe)
	return false
}

type metricCatalogue struct {
	// operatorLabels: every metric the operator's metrics.go files declare, with its
	// variable labels.
	operatorLabels map[string]map[string]bool
	histograms     map[string]bool
	// etcdadminRegistry holds etcdadmin's request metrics: the operator registers them
	// with controller-runtime's registry on its first request to etcd, not at start.
	etcdadminRegistry *prometheus.Registry
}

var catalogueOnce struct {
	sync.Once
	c   metricCatalogue
	err error
}

func catalogue(t *testing.T) metricCatalogue {
	t.Helper()
	catalogueOnce.Do(func() {
		c := metricCatalogue{operatorLabels: map[string]map[string]bool{}, histograms: map[string]bool{}, etcdadminRegistry: prometheus.NewRegistry()}
		if _, err := etcdadmin.NewMetrics(c.etcdadminRegistry); err != nil {
			catalogueOnce.err = err
			return
		}
		for _, f := range metricsFiles {
			if err := declaredMetrics(filepath.Join(root, f), &c); err != nil {
				catalogueOnce.err = err
				return
			}
		}
		catalogueOnce.c = c
	})
	if catalogueOnce.err != nil {
		t.Fatal(catalogueOnce.err)
	}
	return catalogueOnce.c
}

// metricsFiles declare the operator's metrics. A new one must be added here, or the
// rules and dashboard cannot use its metrics (knownMetric refuses etcd_operator_* names
// it has not read).
var metricsFiles = []string{
	"controllers/etcdcluster/metrics.go",
	"controllers/etcdcluster/metrics_certificates.go",
	"controllers/etcdcluster/metrics_hibernation.go",
	"controllers/etcdbackup/metrics.go",
	"controllers/etcdbackup/verify_metrics.go",
	"internal/etcdadmin/metrics.go",
}

// declaredMetrics reads the label names of the metrics a file declares, from its calls
// prometheus.New<Kind>Vec(prometheus.<Kind>Opts{Namespace, Subsystem, Name}, []string{...})
// and the controllers' one-line gaugeVec/counterVec("name", "help", "label", ...).
func declaredMetrics(path string, c *metricCatalogue) error {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return err
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if fd, isFunc := n.(*ast.FuncDecl); isFunc && (fd.Name.Name == "gaugeVec" || fd.Name.Name == "counterVec") {
			return false // the one-line constructors themselves: their calls are read below
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if fn, isIdent := call.Fun.(*ast.Ident); isIdent && (fn.Name == "gaugeVec" || fn.Name == "counterVec") && len(call.Args) >= 2 {
			labels := map[string]bool{}
			for _, a := range append([]ast.Expr{call.Args[0]}, call.Args[2:]...) {
				if stringLit(a) == "" {
					err = fmt.Errorf("%s: %s with arguments that are not literals", path, fn.Name)
					return false
				}
			}
			for _, a := range call.Args[2:] {
				labels[stringLit(a)] = true
			}
			c.operatorLabels[stringLit(call.Args[0])] = labels
			return true
		}
		if len(call.Args) != 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if pkg, isIdent := selX(sel); !ok || !isIdent || pkg != "prometheus" || !strings.HasPrefix(sel.Sel.Name, "New") || !strings.HasSuffix(sel.Sel.Name, "Vec") {
			return true
		}
		opts, ok1 := call.Args[0].(*ast.CompositeLit)
		labelList, ok2 := call.Args[1].(*ast.CompositeLit)
		if !ok1 || !ok2 {
			err = fmt.Errorf("%s: %s with arguments that are not literals", path, sel.Sel.Name)
			return false
		}
		var parts [3]string // namespace, subsystem, name
		for _, el := range opts.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			idx := map[string]int{"Namespace": 0, "Subsystem": 1, "Name": 2}
			if key == nil {
				continue
			}
			i, want := idx[key.Name]
			if !want {
				continue
			}
			parts[i] = stringLit(kv.Value)
		}
		name := prometheus.BuildFQName(parts[0], parts[1], parts[2])
		labels := map[string]bool{}
		for _, el := range labelList.Elts {
			labels[stringLit(el)] = true
		}
		c.operatorLabels[name] = labels
		if sel.Sel.Name == "NewHistogramVec" {
			c.histograms[name] = true
		}
		return true
	})
	return err
}

func selX(sel *ast.SelectorExpr) (string, bool) {
	if sel == nil {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

func stringLit(e ast.Expr) string {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		if s, err := strconv.Unquote(b.Value); err == nil {
			return s
		}
	}
	return ""
}

// checkQuery parses a query as PromQL and checks every series it selects: a metric that
// exists, from the job it belongs to (named in the selector), and labels it has.
func checkQuery(t *testing.T, q string) []string {
	t.Helper()
	e, err := parsePromQL(q)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	known := map[string]metric{}
	for _, s := range selectors(e) {
		m, err := knownMetric(t, s.name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		known[s.name] = m
		job := ""
		for _, f := range s.filters {
			if f.Label == "job" && !f.IsRegexp && !f.IsNegative {
				job = f.Value
			}
			if m.labels != nil && !m.labels[f.Label] {
				problems = append(problems, fmt.Sprintf("%s has no label %q", s.name, f.Label))
			}
		}
		if job == "" || (m.job != "" && job != m.job) || (m.job == "" && job != operatorJob && job != membersJob) {
			problems = append(problems, fmt.Sprintf("%s: select job=%q (got %q), so only the operator's scrapes match", s.name, orJobs(m.job), job))
		}
	}
	for l, below := range groupingLabels(e) {
		for _, s := range below {
			if m, ok := known[s.name]; ok && m.labels != nil && !m.labels[l] {
				problems = append(problems, fmt.Sprintf("grouping by %q, which %s does not have", l, s.name))
			}
		}
	}
	return problems
}

func orJobs(j string) string {
	if j == "" {
		return operatorJob + " or " + membersJob
	}
	return j
}

// TestOperatorMetricsAreAllFound checks the catalogue itself: every metric the
// metrics.go files declare is registered with controller-runtime's registry (or, for
// etcdadmin's, by etcdadmin.NewMetrics), so the label lists read from source are the
// ones served.
func TestOperatorMetricsAreAllFound(t *testing.T) {
	c := catalogue(t)
	if len(c.operatorLabels) < 8 {
		t.Fatalf("found only %d metrics in %v: did a declaration change shape?", len(c.operatorLabels), metricsFiles)
	}
	for name := range c.operatorLabels {
		if !registered(metrics.Registry, name) && !registered(c.etcdadminRegistry, name) {
			t.Errorf("%s is declared but not registered", name)
		}
	}
	for _, name := range []string{"etcd_server_has_leader", "etcd_mvcc_db_total_size_in_bytes", "etcd_server_quota_backend_bytes"} {
		if !registered(prometheus.DefaultRegisterer, name) {
			t.Errorf("etcd's %s is not registered: are etcd's server packages imported?", name)
		}
	}
	if registered(metrics.Registry, "etcd_operator_no_such_metric") {
		t.Error("the registry probe finds a metric that does not exist")
	}
}
