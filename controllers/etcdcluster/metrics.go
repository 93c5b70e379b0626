package etcdcluster

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

var (
	actionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_actions_total",
		Help: "Membership and lifecycle steps taken, by kind and result.",
	}, []string{"namespace", "cluster", "kind", "result"})
	clusterMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_members",
		Help: "Members of a cluster as last observed, by readiness.",
	}, []string{"namespace", "cluster", "state"})
	clusterAvailableGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_available",
		Help: "1 while the cluster's Available condition is True (a quorum of members serve through Ready pods), else 0.",
	}, []string{"namespace", "cluster"})
)

func init() {
	metrics.Registry.MustRegister(actionsTotal, clusterMembers, clusterAvailableGauge)
}

// forgetClusterMetrics drops a deleted cluster's series, so dashboards and alerts do not
// see it forever at its last value.
func forgetClusterMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": name}
	actionsTotal.DeletePartialMatch(labels)
	clusterMembers.DeletePartialMatch(labels)
	clusterAvailableGauge.DeletePartialMatch(labels)
}

// etcdRequestMetrics counts the operator's requests to etcd (by operation, outcome and
// retry cause) on the manager's metrics endpoint.
var etcdRequestMetrics = sync.OnceValue(func() *etcdadmin.Metrics {
	m, err := etcdadmin.NewMetrics(metrics.Registry)
	if err != nil {
		return nil // already registered elsewhere: requests are simply not counted
	}
	return m
})

// recordAction counts a step and exports the membership gauges.
func recordAction(c *etcdv1beta2.EtcdCluster, a planner.Action, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	if a.Kind != planner.Wait && a.Kind != planner.Done {
		actionsTotal.WithLabelValues(c.Namespace, c.Name, a.Kind.String(), result).Inc()
	}
	clusterMembers.WithLabelValues(c.Namespace, c.Name, "ready").Set(float64(len(c.Status.Members.Ready)))
	clusterMembers.WithLabelValues(c.Namespace, c.Name, "unready").Set(float64(len(c.Status.Members.Unready)))
	available := 0.0
	if conditionTrue(c, etcdv1beta2.ClusterConditionAvailable) {
		available = 1
	}
	clusterAvailableGauge.WithLabelValues(c.Namespace, c.Name).Set(available)
}
