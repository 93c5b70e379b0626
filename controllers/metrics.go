package controllers

import (
	"sync"
	"time"

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

	backupsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_backups_total",
		Help: "Backup attempts of an EtcdBackup, by result (the Succeeded condition's reason).",
	}, []string{"namespace", "backup", "reason"})
	backupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_backup_last_success_timestamp_seconds",
		Help: "When the EtcdBackup last stored a backup (Unix time): alert on its age.",
	}, []string{"namespace", "backup"})
	backupSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_backup_size_bytes",
		Help: "Stored size of the EtcdBackup's last backup.",
	}, []string{"namespace", "backup"})
	backupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_backup_duration_seconds",
		Help:    "Time to take and store one backup, successful or not.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12), // 0.25 s .. ~8.5 min
	}, []string{"namespace", "backup"})
)

func init() {
	metrics.Registry.MustRegister(actionsTotal, clusterMembers, clusterAvailableGauge,
		backupsTotal, backupLastSuccess, backupSize, backupDuration)
}

// forgetClusterMetrics drops a deleted cluster's series, so dashboards and alerts do not
// see it forever at its last value.
func forgetClusterMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": name}
	actionsTotal.DeletePartialMatch(labels)
	clusterMembers.DeletePartialMatch(labels)
	clusterAvailableGauge.DeletePartialMatch(labels)
}

// recordBackup counts one backup attempt; on success it records when and how big.
func recordBackup(namespace, name, reason string, took time.Duration, at time.Time, size int64) {
	backupsTotal.WithLabelValues(namespace, name, reason).Inc()
	if took > 0 {
		backupDuration.WithLabelValues(namespace, name).Observe(took.Seconds())
	}
	if reason == etcdv1beta2.ReasonBackupSucceeded {
		backupLastSuccess.WithLabelValues(namespace, name).Set(float64(at.Unix()))
		backupSize.WithLabelValues(namespace, name).Set(float64(size))
	}
}

// forgetBackupMetrics drops a deleted EtcdBackup's series.
func forgetBackupMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "backup": name}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{backupsTotal, backupLastSuccess, backupSize, backupDuration} {
		v.DeletePartialMatch(labels)
	}
}

// etcdRequestMetrics counts the operator's requests to etcd (by operation, outcome and
// retry cause) on the manager's metrics endpoint; shared by every reconciler.
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
