package etcdcluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// Where a reconcile's time goes. controller-runtime's reconcile_time_seconds says how
// long reconciles take; these say which part of one: a slow p99 is a slow step (a
// membership change etcd takes its time over), a slow observation (a member that does
// not answer its probe) or a slow status write (a busy API server), and each has its
// own remedy. Not per cluster: a fleet's thousand clusters would be a thousand series.

// The phases of a reconcile, in order; a reconcile that ends early has only the first.
const (
	phasePrepare = "prepare" // the cluster read, spec checks, Services and TLS
	phaseObserve = "observe" // pods, claims and what etcd answers
	phasePlan    = "plan"    // the budget, claims' growth and the planner
	phaseAct     = "act"     // the step and etcd auth
	phaseStatus  = "status"  // the status write
)

// reconcileBuckets are finer than a decade around a second, where the goal for a
// reconcile under churn lies (issue 32: p99 ≤ 1 s).
var reconcileBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, .75, 1, 1.5, 2, 3, 5, 10, 30, 60}

var (
	reconcilePhaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_cluster_reconcile_phase_seconds",
		Help:    "Time an EtcdCluster reconcile spent in each phase: prepare (spec checks, Services, TLS), observe (pods and etcd), plan (budget, claims, planner), act (the step and etcd auth), status (the status write).",
		Buckets: reconcileBuckets,
	}, []string{"phase"})
	stepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_cluster_step_seconds",
		Help:    "Time an EtcdCluster reconcile's step took, by the step's kind (Wait and Done included: they cost nothing but are counted).",
		Buckets: reconcileBuckets,
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(reconcilePhaseSeconds, stepSeconds)
}

// phaseClock times a reconcile's phases on the wall clock (not the reconciler's clock,
// which tests set): enter ends the phase running and starts the next, stop ends the last.
type phaseClock struct {
	phase string
	since time.Time
}

func startPhases() *phaseClock {
	return &phaseClock{phase: phasePrepare, since: time.Now()}
}

func (p *phaseClock) enter(phase string) {
	now := time.Now()
	reconcilePhaseSeconds.WithLabelValues(p.phase).Observe(now.Sub(p.since).Seconds())
	p.phase, p.since = phase, now
}

func (p *phaseClock) stop() {
	reconcilePhaseSeconds.WithLabelValues(p.phase).Observe(time.Since(p.since).Seconds())
}

// recordStep observes how long a step of kind took since start.
func recordStep(kind planner.Kind, start time.Time) {
	stepSeconds.WithLabelValues(kind.String()).Observe(time.Since(start).Seconds())
}
