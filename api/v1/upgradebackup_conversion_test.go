package v1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// status.upgradeBackup and the upgrade-backup annotation survive v1beta2 → v1 → v1beta2
// unchanged.
func TestUpgradeBackupRoundTrip(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC))
	hub := &v1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{v1beta2.UpgradeBackupAnnotation: v1beta2.UpgradeBackupRequired}},
		Spec:       v1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"},
		Status: v1beta2.EtcdClusterStatus{UpgradeBackup: &v1beta2.UpgradeBackupStatus{
			Version: "3.7.3", FromVersion: "3.6.16", Backup: "c-before-3.7.3-0a1b2c3d", Key: "k.before-3.7.3", Revision: 42, Time: &at}},
	}
	var v1c EtcdCluster
	if err := v1c.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if v1c.Status.UpgradeBackup == nil || v1c.Status.UpgradeBackup.Backup != "c-before-3.7.3-0a1b2c3d" {
		t.Fatalf("v1 status lost upgradeBackup: %+v", v1c.Status.UpgradeBackup)
	}
	var back v1beta2.EtcdCluster
	if err := v1c.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(hub.Status.UpgradeBackup, back.Status.UpgradeBackup) ||
		back.Annotations[v1beta2.UpgradeBackupAnnotation] != v1beta2.UpgradeBackupRequired {
		t.Errorf("round trip: status %+v annotations %v", back.Status.UpgradeBackup, back.Annotations)
	}
}
