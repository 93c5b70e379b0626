package v1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// spec.maintenance is stored as v1beta2 annotations; status.maintenance is the same in
// both versions.

// maintenanceFields are spec.maintenance's fields with the annotations v1beta2 stores
// them as.
func maintenanceFields(m *Maintenance) []annotatedField {
	if m == nil {
		m = &Maintenance{}
	}
	threshold := ""
	if m.DefragmentationThresholdPercent != 0 {
		threshold = strconv.FormatInt(int64(m.DefragmentationThresholdPercent), 10)
	}
	return []annotatedField{
		{annotation: v1beta2.DefragmentationScheduleAnnotation, value: m.DefragmentationSchedule},
		{annotation: v1beta2.DefragmentationTimeZoneAnnotation, value: m.TimeZone},
		{annotation: v1beta2.DefragmentationThresholdAnnotation, value: threshold, fits: isThresholdText},
	}
}

// maintenanceFromAnnotations takes spec.maintenance out of the v1beta2 annotations; nil
// when none holds a field (and the v1 original had no empty spec.maintenance).
func maintenanceFromAnnotations(meta *metav1.ObjectMeta, kept clusterV1Data) *Maintenance {
	m := &Maintenance{
		DefragmentationSchedule: annotationToField(meta, v1beta2.DefragmentationScheduleAnnotation, kept.annotatedFields, anyValue),
		TimeZone:                annotationToField(meta, v1beta2.DefragmentationTimeZoneAnnotation, kept.annotatedFields, anyValue),
	}
	if t := annotationToField(meta, v1beta2.DefragmentationThresholdAnnotation, kept.annotatedFields, isThresholdText); t != "" {
		n, _ := strconv.ParseInt(t, 10, 32)
		m.DefragmentationThresholdPercent = int32(n)
	}
	if *m == (Maintenance{}) && !kept.EmptyMaintenance {
		return nil
	}
	return m
}

// isThresholdText: the annotation is a number the int32 field holds and writes back as
// the same text.
func isThresholdText(v string) bool {
	n, err := strconv.ParseInt(v, 10, 32)
	return err == nil && n != 0 && strconv.FormatInt(n, 10) == v
}

func maintenanceStatusToHub(in *MaintenanceStatus) *v1beta2.MaintenanceStatus {
	if in == nil {
		return nil
	}
	out := &v1beta2.MaintenanceStatus{
		LastScheduleTime: in.LastScheduleTime, LastDefragmentationTime: in.LastDefragmentationTime,
		LastTrigger: in.LastTrigger, LastFreedBytes: in.LastFreedBytes,
	}
	if r := in.Run; r != nil {
		out.Run = &v1beta2.MaintenanceRun{Trigger: r.Trigger, StartedAt: r.StartedAt, CompactedRevision: r.CompactedRevision,
			Defragmented: r.Defragmented, FreedBytes: r.FreedBytes}
	}
	return out
}

func maintenanceStatusFromHub(in *v1beta2.MaintenanceStatus) *MaintenanceStatus {
	if in == nil {
		return nil
	}
	out := &MaintenanceStatus{
		LastScheduleTime: in.LastScheduleTime, LastDefragmentationTime: in.LastDefragmentationTime,
		LastTrigger: in.LastTrigger, LastFreedBytes: in.LastFreedBytes,
	}
	if r := in.Run; r != nil {
		out.Run = &MaintenanceRun{Trigger: r.Trigger, StartedAt: r.StartedAt, CompactedRevision: r.CompactedRevision,
			Defragmented: r.Defragmented, FreedBytes: r.FreedBytes}
	}
	return out
}
