package monitoring

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/VictoriaMetrics/metricsql"
)

// parsePromQL parses q with MetricsQL's parser, then refuses what MetricsQL accepts but
// Prometheus does not, so a query that passes here also loads in Prometheus: functions
// outside PromQL, a range function on an instant vector (rate(x)), MetricsQL modifiers
// and duration units, "or" inside label filters, WITH templates.
func parsePromQL(q string) (metricsql.Expr, error) {
	if strings.Contains(strings.ToUpper(q), "WITH (") {
		return nil, fmt.Errorf("WITH templates are MetricsQL, not PromQL")
	}
	e, err := metricsql.Parse(q)
	if err != nil {
		return nil, err
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		switch x := x.(type) {
		case *metricsql.FuncExpr:
			if !promqlFunctions[x.Name] {
				bad("%s is not a PromQL function", x.Name)
			}
			if i, ok := rangeArg[x.Name]; ok {
				if i >= len(x.Args) {
					bad("%s: missing its range vector argument", x.Name)
				} else if r, ok := x.Args[i].(*metricsql.RollupExpr); !ok || r.Window == nil {
					bad("%s needs a range vector such as x[5m], got %s", x.Name, x.Args[i].AppendString(nil))
				}
			}
			if x.KeepMetricNames {
				bad("keep_metric_names is MetricsQL")
			}
		case *metricsql.AggrFuncExpr:
			if !promqlAggregations[x.Name] {
				bad("%s is not a PromQL aggregation", x.Name)
			}
			if x.Limit > 0 {
				bad("%s: limit is MetricsQL", x.Name)
			}
		case *metricsql.BinaryOpExpr:
			if x.KeepMetricNames || x.FillLeft != nil || x.FillRight != nil || x.JoinModifierPrefix != nil {
				bad("%s: keep_metric_names, fill and prefix are MetricsQL", x.Op)
			}
		case *metricsql.RollupExpr:
			for _, d := range []*metricsql.DurationExpr{x.Window, x.Offset, x.Step} {
				if d != nil && !promDuration.MatchString(string(d.AppendString(nil))) {
					bad("duration %s is not a PromQL duration", d.AppendString(nil))
				}
			}
			if x.InheritStep {
				bad("a subquery needs its resolution in PromQL ([5m:1m])")
			}
			if _, ok := x.Expr.(*metricsql.MetricExpr); !ok && x.Window != nil && x.Step == nil {
				bad("a range of an expression needs subquery syntax ([5m:1m])")
			}
		case *metricsql.MetricExpr:
			if len(x.LabelFilterss) > 1 {
				bad("\"or\" between label filters is MetricsQL")
			}
		}
	})
	if metricsql.IsLikelyInvalid(e) {
		bad("a range function over an expression without a range")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return e, nil
}

// promDuration is a PromQL duration: one or more number-unit pairs.
var promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

// promqlFunctions are Prometheus's query functions (its documentation's list).
var promqlFunctions = setOf(
	"abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
	"count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
	"delta", "deriv", "double_exponential_smoothing", "exp", "floor", "histogram_avg",
	"histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
	"histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase", "irate",
	"label_join", "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time",
	"max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
	"present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn",
	"sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt",
	"stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp",
	"vector", "year",
)

var promqlAggregations = setOf("avg", "bottomk", "count", "count_values", "group", "limit_ratio",
	"limitk", "max", "min", "quantile", "stddev", "stdvar", "sum", "topk")

// rangeArg gives, for PromQL functions that take a range vector, which argument it is.
var rangeArg = func() map[string]int {
	m := map[string]int{"changes": 0, "delta": 0, "deriv": 0, "idelta": 0, "increase": 0,
		"irate": 0, "rate": 0, "resets": 0, "predict_linear": 0, "holt_winters": 0,
		"double_exponential_smoothing": 0, "quantile_over_time": 1}
	for f := range promqlFunctions {
		if _, set := m[f]; !set && strings.HasSuffix(f, "_over_time") {
			m[f] = 0
		}
	}
	return m
}()

func setOf(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// selector is one series selector of a query: its metric name and label filters.
type selector struct {
	name    string
	filters []metricsql.LabelFilter // without __name__
}

// selectors lists the series selectors of e.
func selectors(e metricsql.Expr) []selector {
	var out []selector
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		m, ok := x.(*metricsql.MetricExpr)
		if !ok || len(m.LabelFilterss) == 0 {
			return
		}
		var s selector
		for _, f := range m.LabelFilterss[0] {
			if f.Label == "__name__" {
				s.name = f.Value
			} else {
				s.filters = append(s.filters, f)
			}
		}
		out = append(out, s)
	})
	return out
}

// groupingLabels returns, for every aggregation's by/without and every binary
// operation's on/ignoring in e, the labels named and the selectors below it.
func groupingLabels(e metricsql.Expr) map[string][]selector {
	out := map[string][]selector{}
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		var labels []string
		switch x := x.(type) {
		case *metricsql.AggrFuncExpr:
			labels = x.Modifier.Args
		case *metricsql.BinaryOpExpr:
			labels = append(slices.Clone(x.GroupModifier.Args), x.JoinModifier.Args...)
		default:
			return
		}
		below := selectors(x)
		for _, l := range labels {
			out[l] = append(out[l], below...)
		}
	})
	return out
}

// outputLabels returns the labels of the series e yields, when the query's shape tells
// them (aggregations with by, comparisons, and/unless, histogram_quantile, absent).
func outputLabels(e metricsql.Expr) (labels []string, known bool) {
	switch x := e.(type) {
	case *metricsql.AggrFuncExpr:
		if x.Modifier.Op == "by" {
			return x.Modifier.Args, true
		}
		if x.Modifier.Op == "" {
			return nil, true
		}
	case *metricsql.BinaryOpExpr:
		switch {
		case x.Op == "and" || x.Op == "unless":
			return outputLabels(x.Left)
		case x.Op == "or":
			l, lok := outputLabels(x.Left)
			r, rok := outputLabels(x.Right)
			if lok && rok && slices.Equal(sorted(l), sorted(r)) {
				return l, true
			}
		default:
			// A side without series (a number, time()) is a scalar: the other side's
			// labels remain.
			if len(selectors(x.Right)) == 0 {
				return outputLabels(x.Left)
			}
			if len(selectors(x.Left)) == 0 {
				return outputLabels(x.Right)
			}
			if x.GroupModifier.Op == "on" && x.JoinModifier.Op == "" {
				return x.GroupModifier.Args, true
			}
		}
	case *metricsql.FuncExpr:
		switch x.Name {
		case "absent":
			return nil, true
		case "histogram_quantile":
			l, ok := outputLabels(x.Args[1])
			return slices.DeleteFunc(slices.Clone(l), func(s string) bool { return s == "le" }), ok
		}
	}
	return nil, false
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
