package etcdcluster

import (
	"strings"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Bad annotations disable only what they set, with a warning naming the annotation.
func TestMaintenanceSettings(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{}
	c.Annotations = map[string]string{
		etcdv1beta2.DefragmentationThresholdAnnotation: "150",
		etcdv1beta2.DefragmentationScheduleAnnotation:  "0 3 * * 0",
		etcdv1beta2.DefragmentationTimeZoneAnnotation:  "Europe/Berlin",
	}
	spec, sched, warns := maintenanceSettings(c)
	if spec.DefragThresholdPercent != 150 || sched == nil || len(warns) != 0 || spec.QuotaBackendBytes != etcdv1beta2.DefaultQuotaBackendBytes {
		t.Fatalf("valid settings: %+v %v %v", spec, sched, warns)
	}
	c.Annotations[etcdv1beta2.DefragmentationThresholdAnnotation] = "100"
	c.Annotations[etcdv1beta2.DefragmentationScheduleAnnotation] = "61 * * * *"
	spec, sched, warns = maintenanceSettings(c)
	if spec.DefragThresholdPercent != 0 || sched != nil || len(warns) != 2 ||
		!strings.Contains(warns[0], etcdv1beta2.DefragmentationThresholdAnnotation) || !strings.Contains(warns[1], etcdv1beta2.DefragmentationScheduleAnnotation) {
		t.Fatalf("invalid settings: %+v %v %q", spec, sched, warns)
	}
}
