package etcdadmin

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts the requests Admin makes, so a dashboard shows how often
// etcd was busy and how long membership changes take. Optional: a nil
// *Metrics records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	retries  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	wire     *prometheus.CounterVec // wirecalls.go
	conns    prometheus.Counter
}

// NewMetrics registers the metrics with reg (e.g. controller-runtime's
// metrics.Registry):
//
//	etcd_operator_etcdadmin_requests_total{op,result}     result: ok, transient, permanent
//	etcd_operator_etcdadmin_retries_total{op,kind}        kind: the sentinel retried
//	etcd_operator_etcdadmin_request_duration_seconds{op}  including retries
//	etcd_operator_etcd_requests_total{method,code}        every call on the wire
//	etcd_operator_etcd_connections_total                  connections opened
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "etcd_operator", Subsystem: "etcdadmin", Name: "requests_total",
			Help: "Operations sent to etcd by outcome (after retries).",
		}, []string{"op", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "etcd_operator", Subsystem: "etcdadmin", Name: "retries_total",
			Help: "Retries of operations after a transient etcd error.",
		}, []string{"op", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "etcd_operator", Subsystem: "etcdadmin", Name: "request_duration_seconds",
			Help:    "Duration of operations including retries.",
			Buckets: []float64{.005, .02, .1, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"op"}),
		wire:  newWireCalls(),
		conns: newConnections(),
	}
	for _, c := range []prometheus.Collector{m.requests, m.retries, m.duration, m.wire, m.conns} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(op string, start time.Time, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "permanent"
		if IsTransient(err) {
			result = "transient"
		}
	}
	m.requests.WithLabelValues(op, result).Inc()
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (m *Metrics) retried(op string, kind error) {
	if m == nil {
		return
	}
	label := "unknown"
	if kind != nil {
		label = kind.Error()
		for name, s := range sentinelNames {
			if errors.Is(kind, s) {
				label = name
			}
		}
	}
	m.retries.WithLabelValues(op, label).Inc()
}

// sentinelNames gives the transient sentinels short, stable label values.
var sentinelNames = map[string]error{
	"learner_not_ready":   ErrLearnerNotReady,
	"unhealthy_cluster":   ErrUnhealthyCluster,
	"not_enough_started":  ErrNotEnoughStarted,
	"no_leader":           ErrNoLeader,
	"not_leader":          ErrNotLeader,
	"leader_changed":      ErrLeaderChanged,
	"server_timeout":      ErrServerTimeout,
	"unavailable":         ErrUnavailable,
	"no_endpoint":         ErrNoEndpoint,
	"version_not_decided": ErrVersionNotDecided,
}
