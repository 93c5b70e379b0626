package v1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// v1's spec.backupRef and spec.select are v1beta2's restore annotations, which the
// operator reads; the chosen object in status is the same field in both versions.
func TestRestoreSelectionIsTheV1beta2Annotations(t *testing.T) {
	before := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	src := &EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
		Spec: EtcdRestoreSpec{
			EtcdCluster: EtcdClusterRef{Name: "c"}, StorageType: "S3",
			BackupRef: &BackupRef{Name: "nightly"},
			Select:    &BackupSelector{NewestBefore: &before, MinRevision: 42},
		},
		Status: EtcdRestoreStatus{Backup: &ChosenBackup{Key: "k_v42_2026-12-03-09:00:00", Revision: 42, Time: before, SHA256: "ab"}},
	}
	var hub v1beta2.EtcdRestore
	if err := src.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	a := hub.Annotations
	if a[v1beta2.RestoreBackupRefAnnotation] != "nightly" || a[v1beta2.RestoreNewestBeforeAnnotation] != "2026-12-03T10:00:00Z" ||
		a[v1beta2.RestoreMinRevisionAnnotation] != "42" || len(a) != 3 {
		t.Errorf("v1beta2 annotations %v", a)
	}
	if b := hub.Status.Backup; b == nil || b.Key != "k_v42_2026-12-03-09:00:00" || b.Revision != 42 || !b.Time.Equal(&before) || b.SHA256 != "ab" {
		t.Errorf("v1beta2 status.backup %+v", b)
	}
	var back EtcdRestore
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if back.Spec.BackupRef == nil || back.Spec.BackupRef.Name != "nightly" || back.Spec.Select == nil ||
		!back.Spec.Select.NewestBefore.Equal(&before) || back.Spec.Select.MinRevision != 42 || len(back.Annotations) != 0 {
		t.Errorf("back in v1: %+v %+v annotations %v", back.Spec.BackupRef, back.Spec.Select, back.Annotations)
	}

	// A v1beta2 restore written with an offset keeps its annotation (the v1 field would
	// write it back in UTC); the operator reads either.
	coreos := &v1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "o", Annotations: map[string]string{
		v1beta2.RestoreBackupRefAnnotation: "nightly", v1beta2.RestoreNewestBeforeAnnotation: "2026-12-03T12:00:00+02:00",
	}}}
	var v1r EtcdRestore
	if err := v1r.ConvertFrom(coreos); err != nil {
		t.Fatal(err)
	}
	if v1r.Spec.BackupRef == nil || v1r.Spec.BackupRef.Name != "nightly" || v1r.Spec.Select != nil ||
		v1r.Annotations[v1beta2.RestoreNewestBeforeAnnotation] != "2026-12-03T12:00:00+02:00" {
		t.Errorf("v1 view: %+v %+v %v", v1r.Spec.BackupRef, v1r.Spec.Select, v1r.Annotations)
	}
}

func TestBackupStatusBackupsConvert(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	hub := &v1beta2.EtcdBackup{Status: v1beta2.EtcdBackupStatus{Backups: []v1beta2.StoredBackup{
		{Key: "k_v9_2026-12-03-10:00:00", Revision: 9, Time: at, Size: 100, SHA256: "cd"},
	}}}
	var v1b EtcdBackup
	if err := v1b.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if len(v1b.Status.Backups) != 1 || v1b.Status.Backups[0] != (StoredBackup{Key: "k_v9_2026-12-03-10:00:00", Revision: 9, Time: at, Size: 100, SHA256: "cd"}) {
		t.Errorf("v1 status.backups %+v", v1b.Status.Backups)
	}
}
