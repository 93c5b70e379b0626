package etcdbackup

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestBackupMetrics(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	recordBackup("ns", "b", etcdv1beta2.ReasonTimeout, 5*time.Second, time.Time{}, 0)
	recordBackup("ns", "b", etcdv1beta2.ReasonBackupSucceeded, 2*time.Second, at, 4096)
	if got := testutil.ToFloat64(backupsTotal.WithLabelValues("ns", "b", etcdv1beta2.ReasonTimeout)); got != 1 {
		t.Errorf("timeouts = %v, want 1", got)
	}
	if got := testutil.ToFloat64(backupLastSuccess.WithLabelValues("ns", "b")); got != float64(at.Unix()) {
		t.Errorf("last success = %v, want %v", got, at.Unix())
	}
	if got := testutil.ToFloat64(backupSize.WithLabelValues("ns", "b")); got != 4096 {
		t.Errorf("size = %v, want 4096", got)
	}
	if n := testutil.CollectAndCount(backupDuration); n != 1 {
		t.Errorf("%d duration series, want 1", n)
	}
	forgetBackupMetrics("ns", "b")
	for name, c := range map[string]prometheus.Collector{"total": backupsTotal, "last": backupLastSuccess, "size": backupSize, "duration": backupDuration} {
		if n := testutil.CollectAndCount(c); n != 0 {
			t.Errorf("%s: %d series left after the EtcdBackup was deleted", name, n)
		}
	}
}
