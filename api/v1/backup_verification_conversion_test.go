package v1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.verification is stored as three v1beta2 annotations and the lastVerified* status
// fields carry over unchanged, both ways.
func TestBackupVerificationIsTheV1beta2Annotations(t *testing.T) {
	verified := metav1.NewTime(time.Date(2026, 12, 3, 4, 5, 6, 0, time.UTC))
	src := &EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		Spec:       EtcdBackupSpec{Verification: &BackupVerification{AfterEachBackup: true, Schedule: "@daily", TimeZone: "Europe/Berlin"}},
		Status: EtcdBackupStatus{LastVerifiedTime: &verified, LastVerifiedKey: "k_v7_x", LastVerifiedRevision: 7, LastVerificationStartTime: &verified,
			LastVerifiedSHA256: "5ha", LastVerifiedPinSignature: "5ig"},
	}
	var hub v1beta2.EtcdBackup
	if err := src.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	a := hub.Annotations
	if a[v1beta2.BackupVerifyAfterEachAnnotation] != "true" || a[v1beta2.BackupVerifyScheduleAnnotation] != "@daily" || a[v1beta2.BackupVerifyTimeZoneAnnotation] != "Europe/Berlin" {
		t.Errorf("v1beta2 annotations %v", a)
	}
	if _, ok := a[ConversionDataAnnotation]; ok {
		t.Errorf("nothing was lost, yet conversion data: %v", a)
	}
	if s := hub.Status; s.LastVerifiedKey != "k_v7_x" || s.LastVerifiedRevision != 7 || s.LastVerifiedSHA256 != "5ha" || s.LastVerifiedPinSignature != "5ig" || !s.LastVerifiedTime.Equal(&verified) || !s.LastVerificationStartTime.Equal(&verified) {
		t.Errorf("v1beta2 status %+v", s)
	}
	var back EtcdBackup
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if v := back.Spec.Verification; v == nil || *v != *src.Spec.Verification || len(back.Annotations) != 0 {
		t.Errorf("back in v1: verification %+v annotations %v", v, back.Annotations)
	}

	// An empty spec.verification survives; an after-each annotation other than "true"
	// stays an annotation on the v1 side.
	empty := &EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: EtcdBackupSpec{Verification: &BackupVerification{}}}
	var hub2 v1beta2.EtcdBackup
	if err := empty.ConvertTo(&hub2); err != nil {
		t.Fatal(err)
	}
	var back2 EtcdBackup
	if err := back2.ConvertFrom(&hub2); err != nil {
		t.Fatal(err)
	}
	if back2.Spec.Verification == nil || *back2.Spec.Verification != (BackupVerification{}) {
		t.Errorf("empty verification came back as %+v", back2.Spec.Verification)
	}
	odd := &v1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "o", Annotations: map[string]string{v1beta2.BackupVerifyAfterEachAnnotation: "yes"}}}
	var v1o EtcdBackup
	if err := v1o.ConvertFrom(odd); err != nil {
		t.Fatal(err)
	}
	if v1o.Spec.Verification != nil || v1o.Annotations[v1beta2.BackupVerifyAfterEachAnnotation] != "yes" {
		t.Errorf("v1 view of after-each=yes: verification %+v annotations %v", v1o.Spec.Verification, v1o.Annotations)
	}
}
