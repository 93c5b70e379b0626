package etcdbackup

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// succeededBackup is a periodic backup whose last success was at last.
func succeededBackup(intervalSeconds, timeoutSeconds int64, last time.Time) *etcdv1beta2.EtcdBackup {
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", Generation: 1},
		Spec: etcdv1beta2.EtcdBackupSpec{BackupPolicy: &etcdv1beta2.BackupPolicy{
			BackupIntervalInSecond: intervalSeconds, TimeoutInSecond: timeoutSeconds}},
		Status: etcdv1beta2.EtcdBackupStatus{Succeeded: true, LastSuccessDate: metav1.NewTime(last)},
	}
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded,
		Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded, ObservedGeneration: 1})
	return eb
}

// An interval stored before the admission maximum existed (or beyond a Duration's range)
// must mean "a long time", never wrap around into "now".
func TestBackupDueSaturatesHugeIntervals(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, s := range []int64{math.MaxInt64, 1 << 62, math.MaxInt64 / 1000, 300 * 365 * 24 * 3600} {
		eb := succeededBackup(s, 0, now.Add(-time.Minute))
		wait, due := backupDue(eb, now)
		if due || wait < 365*24*time.Hour {
			t.Errorf("interval %d s, last success a minute ago: due=%v, next in %v; want not due for years", s, due, wait)
		}
	}
}

// A huge stored timeout bounds nothing sooner than a huge time, and the backup pod's
// deadline stays positive.
func TestBackupTimeoutSaturates(t *testing.T) {
	eb := succeededBackup(0, math.MaxInt64, time.Time{})
	if got := backupTimeout(eb); got < 365*24*time.Hour {
		t.Errorf("timeout of %d s = %v", int64(math.MaxInt64), got)
	}
	eb.Spec.PVC = &etcdv1beta2.PVCBackupSource{ClaimName: "c", Path: "p"}
	eb.Spec.EtcdEndpoints = []string{"http://x:2379"}
	pod := (&Reconciler{}).backupPod(eb, &backupTarget{Endpoints: eb.Spec.EtcdEndpoints})
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d <= 0 {
		t.Errorf("backup pod activeDeadlineSeconds %v, want positive", d)
	}
}
