package benchmark

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// apiCounter counts the requests the operator sends to the API server by verb and
// resource, as its transport sees them (the API server's own metrics have no client label).
type apiCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *apiCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		key := requestKey(req)
		a.mu.Lock()
		if a.n == nil {
			a.n = map[string]int{}
		}
		a.n[key]++
		a.mu.Unlock()
		return next.RoundTrip(req)
	})
}

func (a *apiCounter) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.n))
	for k, v := range a.n {
		out[k] = v
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// requestKey is "VERB resource[/subresource]" of an API path, e.g. "PATCH
// etcdclusters/status", "WATCH pods" (names and namespaces left out).
func requestKey(req *http.Request) string {
	verb := req.Method
	if verb == http.MethodGet && req.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return verb + " " + req.URL.Path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return verb + " namespaces"
	case 1:
		if verb == http.MethodGet {
			verb = "LIST"
		}
		return verb + " " + parts[0]
	case 2:
		return verb + " " + parts[0]
	default:
		return verb + " " + parts[0] + "/" + parts[2]
	}
}

// counters are what an idle window is measured by, read at its start and end.
type counters struct {
	api        map[string]int     // the operator's requests by requestKey
	apiserver  map[string]float64 // the API server's EtcdCluster requests by "VERB subresource"
	etcd       map[string]float64 // etcd_operator_etcd_requests_total by method
	etcdConns  float64            // etcd_operator_etcd_connections_total
	reconciles float64
}

func (s *scaleRun) snapshot(b *testing.B) counters {
	c := counters{api: s.api.counts(), apiserver: apiserverClusterRequests(b, s.e), etcd: map[string]float64{}}
	for _, mf := range gatherOperator(b) {
		switch mf.GetName() {
		case "etcd_operator_etcd_requests_total":
			for _, m := range mf.GetMetric() {
				c.etcd[label(m, "method")] += m.GetCounter().GetValue()
			}
		case "etcd_operator_etcd_connections_total":
			for _, m := range mf.GetMetric() {
				c.etcdConns += m.GetCounter().GetValue()
			}
		case "controller_runtime_reconcile_total":
			for _, m := range mf.GetMetric() {
				if label(m, "controller") == "etcdcluster" {
					c.reconciles += m.GetCounter().GetValue()
				}
			}
		}
	}
	return c
}

// reportIdle reports an idle window's rates per minute per cluster.
func (s *scaleRun) reportIdle(b *testing.B, n int, before, after counters) {
	perMin := func(d float64) float64 { return d / scaleIdle.Minutes() / float64(n) }
	var writes, reads, statusWrites, etcdCalls float64
	lines := deltaLines(before.api, after.api, perMin, func(k string, d float64) {
		if verb, _, _ := strings.Cut(k, " "); verb == "GET" || verb == "LIST" || verb == "WATCH" {
			reads += d
		} else {
			writes += d
		}
	})
	serverLines := deltaLines(before.apiserver, after.apiserver, perMin, func(k string, d float64) {
		if strings.HasSuffix(k, " status") && !strings.HasPrefix(k, "GET") {
			statusWrites += d
		}
	})
	etcdLines := deltaLines(before.etcd, after.etcd, perMin, func(_ string, d float64) { etcdCalls += d })
	b.ReportMetric(perMin(writes), "api-writes/min/cluster")
	b.ReportMetric(perMin(reads), "api-reads/min/cluster")
	b.ReportMetric(perMin(statusWrites), "status-writes/min/cluster")
	b.ReportMetric(perMin(etcdCalls), "etcd-calls/min/cluster")
	b.ReportMetric(perMin(after.etcdConns-before.etcdConns), "etcd-conns/min/cluster")
	b.ReportMetric(perMin(after.reconciles-before.reconciles), "reconciles/min/cluster")
	b.Logf("idle %v, %d clusters, per minute per cluster: %.2f reconciles; operator → API server: %.2f writes, %.2f reads [%s]; API server counted on EtcdClusters [%s]; operator → etcd: %.2f calls [%s], %.2f connections opened",
		scaleIdle, n, perMin(after.reconciles-before.reconciles), perMin(writes), perMin(reads), strings.Join(lines, ", "),
		strings.Join(serverLines, ", "), perMin(etcdCalls), strings.Join(etcdLines, ", "), perMin(after.etcdConns-before.etcdConns))
}

// deltaLines hands each counter that moved between before and after to add, and
// returns them as sorted "key rate" lines (rate: perMin of the change).
func deltaLines[V int | float64](before, after map[string]V, perMin func(float64) float64, add func(key string, d float64)) []string {
	var lines []string
	for k, v := range after {
		d := float64(v - before[k])
		if d == 0 {
			continue
		}
		add(k, d)
		lines = append(lines, fmt.Sprintf("%s %.2f", k, perMin(d)))
	}
	sort.Strings(lines)
	return lines
}

func gatherOperator(b *testing.B) []*dto.MetricFamily {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	return mfs
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

var requestTotalLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

// apiserverClusterRequests reads the API server's /metrics: requests on EtcdClusters by
// "VERB subresource" ("PATCH status", "GET -"). A read that fails is tried again for up
// to two minutes: with hundreds of members starting on the same cores, the API server
// answers late (a 300-cluster round once ended on one such timeout).
func apiserverClusterRequests(b *testing.B, e *framework.Env) map[string]float64 {
	cfg := rest.CopyConfig(e.Bench.RestConfig())
	cfg.Timeout = 30 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var out map[string]float64
	framework.Eventually(b, 2*time.Minute, "the API server's metrics", func() (err error) {
		out, err = readClusterRequests(hc, strings.TrimSuffix(cfg.Host, "/")+"/metrics")
		return err
	})
	return out
}

func readClusterRequests(hc *http.Client, url string) (map[string]float64, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestTotalLine.FindStringSubmatch(sc.Text())
		if m == nil || !strings.Contains(m[1], `resource="etcdclusters"`) {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(m[1], ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		sub := labels["subresource"]
		if sub == "" {
			sub = "-"
		}
		out[labels["verb"]+" "+sub] += v
	}
	return out, sc.Err()
}

// histogram is one of the EtcdCluster controller's histograms: cumulative counts per
// upper bound, the number of samples and their sum.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
	sum    float64
}

// reconcileHistogram is controller-runtime's reconcile time histogram of the
// EtcdCluster controller.
func reconcileHistogram(b *testing.B) histogram {
	return operatorHistogram(b, "controller_runtime_reconcile_time_seconds", "controller")
}

// queueHistogram is how long the EtcdCluster controller's requests waited in its
// workqueue for a worker (controller-runtime's workqueue_queue_duration_seconds, whose
// buckets are decades: 0.1, 1, 10 s).
func queueHistogram(b *testing.B) histogram {
	return operatorHistogram(b, "workqueue_queue_duration_seconds", "name")
}

func operatorHistogram(b *testing.B, metric, controllerLabel string) histogram {
	return operatorHistograms(b, metric, controllerLabel)["etcdcluster"]
}

// operatorHistograms is each series of one of the operator's histograms by the value of
// its label byLabel.
func operatorHistograms(b *testing.B, metric, byLabel string) map[string]histogram {
	out := map[string]histogram{}
	for _, mf := range gatherOperator(b) {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			var h histogram
			for _, bk := range m.GetHistogram().GetBucket() {
				h.bounds = append(h.bounds, bk.GetUpperBound())
				h.counts = append(h.counts, float64(bk.GetCumulativeCount()))
			}
			h.count = float64(m.GetHistogram().GetSampleCount())
			h.sum = m.GetHistogram().GetSampleSum()
			out[label(m, byLabel)] = h
		}
	}
	return out
}

// slowParts says, for each series of a histogram by label (a reconcile's phases, its
// steps, etcd operations), how many samples fell between before and after, their p99 and
// the share over 1 s: where a reconcile p99 above the goal comes from. Series without
// samples in between are left out.
func slowParts(before, after map[string]histogram) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(after)) {
		d := after[name].minus(before[name])
		if d.count == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f× p99 %.2f s, %.0f%% > 1 s", name, d.count, d.quantile(0.99), 100*d.above(1)))
	}
	return strings.Join(parts, "; ")
}

// above is the share of the samples above bound (one of the histogram's bounds).
func (h histogram) above(bound float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	for i, ub := range h.bounds {
		if ub == bound {
			return 1 - h.counts[i]/h.count
		}
	}
	return math.NaN()
}

func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

func (h histogram) minus(o histogram) histogram {
	d := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), count: h.count - o.count, sum: h.sum - o.sum}
	for i := range h.counts {
		d.counts[i] = h.counts[i]
		if i < len(o.counts) {
			d.counts[i] -= o.counts[i]
		}
	}
	return d
}

// quantile interpolates linearly inside the bucket holding it, as PromQL's
// histogram_quantile does.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, c := range h.counts {
		if c >= rank {
			if c == below {
				return h.bounds[i]
			}
			return lower + (h.bounds[i]-lower)*(rank-below)/(c-below)
		}
		lower, below = h.bounds[i], c
	}
	return lower // beyond the last bound
}

// operatorCPU is a CPU profile of this process; stop sums the samples of the
// operator's goroutines (framework.OperatorProfileLabel) and, when
// ETCD_OPERATOR_SCALE_PROFILES names a directory and the profile has a name, keeps the
// profile there as <name>.pprof (read it with go tool pprof -tagfocus etcd-operator).
type operatorCPU struct {
	buf  bytes.Buffer
	name string
}

const scaleProfilesEnv = "ETCD_OPERATOR_SCALE_PROFILES"

func startOperatorCPU(b *testing.B) *operatorCPU {
	p := &operatorCPU{}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		b.Fatal(err)
	}
	return p
}

func (p *operatorCPU) stop(b *testing.B) (operator, total float64) {
	pprof.StopCPUProfile()
	if dir := os.Getenv(scaleProfilesEnv); dir != "" && p.name != "" {
		path := filepath.Join(dir, p.name+".pprof")
		if err := os.WriteFile(path, p.buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("CPU profile kept: %s", path)
	}
	prof, err := profile.Parse(&p.buf)
	if err != nil {
		b.Fatal(err)
	}
	idx := len(prof.SampleType) - 1 // cpu nanoseconds
	for _, s := range prof.Sample {
		v := float64(s.Value[idx]) / 1e9
		total += v
		if len(s.Label[framework.OperatorProfileLabel]) > 0 {
			operator += v
		}
	}
	return operator, total
}

// processRSS is this process's resident set (the operator and the bench's in-process
// parts: registry, provisioner, proxy) in bytes.
func processRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// goHeap is the live heap after a collection, in bytes.
func goHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func mib(v uint64) float64 { return float64(v) / (1 << 20) }

func memInfo() string {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d CPUs, %.1f GiB RAM, %.1f GiB free", runtime.NumCPU(),
		float64(si.Totalram)*float64(si.Unit)/(1<<30), float64(si.Freeram)*float64(si.Unit)/(1<<30))
}

// nodesReading is the CPU the bench's nodes have used so far (their pods and their
// agents) and when it was read; two readings give a window's.
type nodesReading struct {
	at  time.Time
	cpu bench.NodesCPU
}

func (s *scaleRun) nodesCPU(b *testing.B) nodesReading {
	c, err := s.e.Bench.NodesCPU()
	if err != nil {
		b.Fatal(err)
	}
	return nodesReading{at: time.Now(), cpu: c}
}

// nodesRestWindow is how long the nodes' CPU is measured with no member on them.
const nodesRestWindow = 30 * time.Second

// measureNodesAtRest measures what the nodes cost with no member on them (their agents'
// housekeeping, cluster DNS), in CPU-seconds a second, so that it is not counted as the
// members': at 10 members it is as much again as their own agents' share.
func (s *scaleRun) measureNodesAtRest(b *testing.B) {
	from := s.nodesCPU(b)
	time.Sleep(nodesRestWindow) // the window being measured
	to := s.nodesCPU(b)
	secs := to.at.Sub(from.at).Seconds()
	s.restPods = (to.cpu.Pods - from.cpu.Pods).Seconds() / secs
	s.restAgents = (to.cpu.Agents - from.cpu.Agents).Seconds() / secs
	b.Logf("nodes with no member: %.3f CPUs busy in their pods (cluster DNS), %.3f in their agents", s.restPods, s.restAgents)
}

// nodesCPUPerMember is what the nodes used between two readings beyond their cost at
// rest, per member pod: in the pods and in the agents, in CPU seconds.
func (s *scaleRun) nodesCPUPerMember(from, to nodesReading, members int) (pods, agents float64) {
	secs := to.at.Sub(from.at).Seconds()
	pods = max(0, (to.cpu.Pods-from.cpu.Pods).Seconds()-s.restPods*secs) / float64(members)
	agents = max(0, (to.cpu.Agents-from.cpu.Agents).Seconds()-s.restAgents*secs) / float64(members)
	return pods, agents
}

// reportNodesCreating reports what the nodes used per member since from, on one path
// of a round's creation (path and window name it in the log, metric in the results).
func (s *scaleRun) reportNodesCreating(b *testing.B, path, window, metric string, from nodesReading, members int) {
	to := s.nodesCPU(b)
	pods, agents := s.nodesCPUPerMember(from, to, members)
	b.ReportMetric(pods+agents, metric)
	b.Logf("%s: the nodes' CPU per member %s: %.2f s in the pods, %.2f s in the agents (%s)",
		path, window, pods, agents, agentsPerMember(from, to, members))
}

// reportNodesIdle reports what a member costs its node in the idle window beyond the
// nodes' cost at rest, per minute (and returns the sum):
// CPU in the pod (etcd's ticks, the probes it answers) and in the node's agents (the
// kubelet probing it and syncing its pod, containerd), and from them, with the
// operator's own idle CPU per member, how many idle members would keep every CPU of
// this machine busy. Beyond that count the members cannot all stay healthy here
// whatever the operator does: it bounds what a round on this machine can measure.
func (s *scaleRun) reportNodesIdle(b *testing.B, members int, from, to nodesReading, operatorPerMember float64) (perMember float64) {
	pods, agents := s.nodesCPUPerMember(from, to, members)
	pods, agents = pods/scaleIdle.Minutes(), agents/scaleIdle.Minutes()
	operator := operatorPerMember / scaleIdle.Minutes()
	fill := (float64(runtime.NumCPU()) - s.restPods - s.restAgents) * 60 / (pods + agents + operator)
	b.ReportMetric(pods, "idle-member-cpu-s/min/member")
	b.ReportMetric(agents, "idle-agents-cpu-s/min/member")
	b.ReportMetric(fill, "idle-members-filling-the-machine")
	b.Logf("idle: per member per minute %.3f CPU-s in its pod, %.3f in its node's agents (%s in the %v, the nodes' cost at rest included), %.4f in the operator; %d CPUs would be busy with ~%.0f idle members",
		pods, agents, agentsPerMember(from, to, members), scaleIdle, operator, runtime.NumCPU(), fill)
	return pods + agents + operator
}

// agentsPerMember is the agents' CPU between two readings by agent, per member pod (the
// nodes' cost at rest included: it is measured for all agents together only).
func agentsPerMember(from, to nodesReading, members int) string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(to.cpu.Agent)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", a, (to.cpu.Agent[a]-from.cpu.Agent[a]).Seconds()/float64(members)))
	}
	return strings.Join(parts, ", ") + " s"
}
