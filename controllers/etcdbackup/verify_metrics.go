package etcdbackup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var (
	backupLastVerified         = gaugeVec("etcd_operator_backup_last_verified_timestamp_seconds", "When a backup of the EtcdBackup last passed verification (Unix time): alert on its age.", "namespace", "backup")
	backupVerificationFailures = counterVec("etcd_operator_backup_verification_failures_total", "Failed verifications of an EtcdBackup's backups, by the Verified condition's reason.", "namespace", "backup", "reason")
)

func init() {
	metrics.Registry.MustRegister(backupLastVerified, backupVerificationFailures)
}

// recordVerification counts one verification: when it passed, or why it failed.
func recordVerification(namespace, name, reason string, at time.Time) {
	if reason == etcdv1beta2.ReasonNothingToVerify {
		return // not a verification: nothing was stored yet
	}
	if reason == etcdv1beta2.ReasonBackupVerified {
		backupLastVerified.WithLabelValues(namespace, name).Set(float64(at.Unix()))
		return
	}
	backupVerificationFailures.WithLabelValues(namespace, name, reason).Inc()
}

// forgetVerifyMetrics drops a deleted EtcdBackup's verification series.
func forgetVerifyMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "backup": name}
	backupLastVerified.DeletePartialMatch(labels)
	backupVerificationFailures.DeletePartialMatch(labels)
}
