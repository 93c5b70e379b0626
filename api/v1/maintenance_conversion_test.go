package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.maintenance is stored as three v1beta2 annotations with these exact keys and
// texts, and status.maintenance as the same status field, both ways.
func TestMaintenanceIsTheV1beta2Annotations(t *testing.T) {
	at := metav1.Unix(1700000000, 0)
	src := &EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		Spec: EtcdClusterSpec{Size: 3, Maintenance: &Maintenance{
			DefragmentationSchedule: "0 3 * * 0", TimeZone: "Europe/Berlin", DefragmentationThresholdPercent: 150}},
		Status: EtcdClusterStatus{Maintenance: &MaintenanceStatus{
			Run:              &MaintenanceRun{Trigger: "NoSpace", StartedAt: at, CompactedRevision: 42, Defragmented: []string{"a1"}, FreedBytes: 7},
			LastScheduleTime: &at, LastDefragmentationTime: &at, LastTrigger: "Schedule", LastFreedBytes: 9}},
	}
	var hub v1beta2.EtcdCluster
	if err := src.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		v1beta2.DefragmentationScheduleAnnotation:  "0 3 * * 0",
		v1beta2.DefragmentationTimeZoneAnnotation:  "Europe/Berlin",
		v1beta2.DefragmentationThresholdAnnotation: "150",
	}
	if !equality.Semantic.DeepEqual(hub.Annotations, want) {
		t.Errorf("v1beta2 annotations %v, want %v", hub.Annotations, want)
	}
	if r := hub.Status.Maintenance; r == nil || r.Run == nil || r.Run.CompactedRevision != 42 || r.LastFreedBytes != 9 {
		t.Errorf("v1beta2 status.maintenance %+v", r)
	}
	var back EtcdCluster
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(back.Spec.Maintenance, src.Spec.Maintenance) || len(back.Annotations) != 0 ||
		!equality.Semantic.DeepEqual(back.Status.Maintenance, src.Status.Maintenance) {
		t.Errorf("back in v1: maintenance %+v status %+v annotations %v", back.Spec.Maintenance, back.Status.Maintenance, back.Annotations)
	}

	// A v1beta2 threshold the int32 field cannot hold as the same text stays an annotation.
	coreos := &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{
		v1beta2.DefragmentationThresholdAnnotation: "0150", v1beta2.DefragmentationScheduleAnnotation: "@daily"}}}
	var v1c EtcdCluster
	if err := v1c.ConvertFrom(coreos); err != nil {
		t.Fatal(err)
	}
	if m := v1c.Spec.Maintenance; m == nil || m.DefragmentationSchedule != "@daily" || m.DefragmentationThresholdPercent != 0 ||
		v1c.Annotations[v1beta2.DefragmentationThresholdAnnotation] != "0150" {
		t.Errorf("v1 view of an annotated v1beta2 cluster: maintenance %+v annotations %v", m, v1c.Annotations)
	}
}
