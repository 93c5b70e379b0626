package etcdcluster

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

var (
	actionsTotal          = counterVec("etcd_operator_actions_total", "Membership and lifecycle steps taken, by kind and result (ok, error, or waiting: refused by etcd for a moment and retried shortly).", "namespace", "cluster", "kind", "result")
	clusterMembers        = gaugeVec("etcd_operator_cluster_members", "Members of a cluster as last observed, by readiness.", "namespace", "cluster", "state")
	clusterAvailableGauge = gaugeVec("etcd_operator_cluster_available", "1 while the cluster's Available condition is True (a quorum of members serve through Ready pods), else 0.", "namespace", "cluster")
	clusterDBSize         = gaugeVec("etcd_operator_cluster_db_size_bytes", "Size of the largest member's database file as last reported by the members (the largest: the first to reach the quota raises NOSPACE).", "namespace", "cluster")
	clusterDBSizeInUse    = gaugeVec("etcd_operator_cluster_db_size_in_use_bytes", "Largest in-use size of a member's database as last reported; db_size_bytes minus this is what a defragmentation would free.", "namespace", "cluster")
	clusterQuota          = gaugeVec("etcd_operator_cluster_quota_backend_bytes", "The members' quota-backend-bytes: as they report it (etcd >= 3.6), else as configured (etcd's default 2 GiB unless set).", "namespace", "cluster")
	clusterReconciled     = gaugeVec("etcd_operator_cluster_reconciled", "1 while the cluster's Reconciled condition is True (the operator observes it and its last step succeeded), else 0; written with every status write.", "namespace", "cluster")
	clusterAlarms         = gaugeVec("etcd_operator_cluster_alarms", "Members with an active etcd alarm, by alarm type (NOSPACE, CORRUPT), as last listed.", "namespace", "cluster", "alarm")
)

// gaugeVec and counterVec declare a labelled series in one line: its name, help and label names.
func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func init() {
	metrics.Registry.MustRegister(actionsTotal, clusterMembers, clusterAvailableGauge,
		clusterDBSize, clusterDBSizeInUse, clusterQuota, clusterAlarms, clusterReconciled)
}

// forgetClusterMetrics drops a deleted cluster's series, so dashboards and alerts do not
// see it forever at its last value.
func forgetClusterMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": name}
	actionsTotal.DeletePartialMatch(labels)
	clusterMembers.DeletePartialMatch(labels)
	clusterAvailableGauge.DeletePartialMatch(labels)
	clusterDBSize.DeletePartialMatch(labels)
	clusterDBSizeInUse.DeletePartialMatch(labels)
	clusterQuota.DeletePartialMatch(labels)
	clusterAlarms.DeletePartialMatch(labels)
	clusterReconciled.DeletePartialMatch(labels)
	forgetDefragmentationMetrics(labels)
	forgetCertificateMetrics(labels) // status_certificates.go
	clusterHibernated.DeletePartialMatch(labels)
}

// recordReconciled exports the Reconciled condition as it is about to be written. Every
// path of a reconcile ends in the status writer's flush, so failures that stop a
// reconcile before any step (API or TLS errors, which count no action) show here too.
func recordReconciled(c *etcdv1beta2.EtcdCluster) {
	v := 0.0
	if conditionTrue(c, etcdv1beta2.ClusterConditionReconciled) {
		v = 1
	}
	clusterReconciled.WithLabelValues(c.Namespace, c.Name).Set(v)
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
func recordAction(c *etcdv1beta2.EtcdCluster, a planner.Action, err error, waited bool) {
	result := "ok"
	switch {
	case waited: // refused by etcd for a moment (etcdWait, act.go), retried in a second
		result = "waiting"
	case err != nil:
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
	recordHibernation(c) // metrics_hibernation.go
}

// recordSpace exports the database sizes, the quota and the alarms of one observation;
// what it did not learn (no member answered, no quorum for the alarm list) keeps its
// last value.
func recordSpace(c *etcdv1beta2.EtcdCluster, s spaceObservation) {
	if s.sizesKnown {
		clusterDBSize.WithLabelValues(c.Namespace, c.Name).Set(float64(s.dbSize))
		clusterDBSizeInUse.WithLabelValues(c.Namespace, c.Name).Set(float64(s.dbInUse))
	}
	quota := s.quota
	if quota == 0 {
		quota = render.QuotaBackendBytes(c)
	}
	clusterQuota.WithLabelValues(c.Namespace, c.Name).Set(float64(quota))
	if !s.alarmsKnown {
		return
	}
	count := map[string]int{etcdadmin.AlarmNoSpace: 0, etcdadmin.AlarmCorrupt: 0}
	for _, a := range s.alarms {
		count[a.Type]++
	}
	for typ, n := range count {
		clusterAlarms.WithLabelValues(c.Namespace, c.Name, typ).Set(float64(n))
	}
}
