package etcdbackup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var (
	backupsTotal = counterVec("etcd_operator_backups_total", "Backup attempts of an EtcdBackup, by result (the Succeeded condition's reason). A run skipped for a hibernated cluster is no attempt and is not counted.", "namespace", "backup", "reason")
	// backupSkipped is 1 while the EtcdBackup's due runs are skipped (its Skipped
	// condition is set): the backup alerts leave such a backup alone, since a hibernated
	// cluster has nothing new to save and its last backup ageing is expected.
	backupSkipped     = gaugeVec("etcd_operator_backup_skipped", "1 while the EtcdBackup's due runs are skipped because its cluster is hibernated (the Skipped condition), 0 otherwise.", "namespace", "backup")
	backupLastSuccess = gaugeVec("etcd_operator_backup_last_success_timestamp_seconds", "When the EtcdBackup last stored a backup (Unix time): alert on its age.", "namespace", "backup")
	backupSize        = gaugeVec("etcd_operator_backup_size_bytes", "Stored size of the EtcdBackup's last backup.", "namespace", "backup")
	backupDuration    = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_backup_duration_seconds",
		Help:    "Time to take and store one backup, successful or not.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12), // 0.25 s .. ~8.5 min
	}, []string{"namespace", "backup"})
)

// gaugeVec and counterVec declare a labelled series in one line: its name, help and label names.
func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func init() {
	metrics.Registry.MustRegister(backupsTotal, backupLastSuccess, backupSize, backupDuration, backupSkipped)
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
	}{backupsTotal, backupLastSuccess, backupSize, backupDuration, backupSkipped} {
		v.DeletePartialMatch(labels)
	}
}
