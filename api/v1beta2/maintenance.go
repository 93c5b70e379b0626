package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Space maintenance settings CoreOS's API has no field for. v1's spec.maintenance is
// stored as these annotations on the EtcdCluster.
const (
	// DefragmentationScheduleAnnotation is a cron schedule (five fields or a macro such as
	// @daily, as a CronJob's) on which every member is defragmented, one at a time,
	// followers first and the leader last.
	DefragmentationScheduleAnnotation = "etcd.database.coreos.com/defragmentation-schedule"
	// DefragmentationTimeZoneAnnotation is the IANA time zone the schedule is read in;
	// absent: UTC.
	DefragmentationTimeZoneAnnotation = "etcd.database.coreos.com/defragmentation-time-zone"
	// DefragmentationThresholdAnnotation defragments a member whose database is larger
	// than this percentage of its in-use size: a whole number from
	// MinDefragmentationThresholdPercent to MaxDefragmentationThresholdPercent.
	DefragmentationThresholdAnnotation = "etcd.database.coreos.com/defragmentation-threshold-percent"
)

// Bounds of the threshold: at 100% or below every database qualifies.
const (
	MinDefragmentationThresholdPercent = 101
	MaxDefragmentationThresholdPercent = 10000
)

// MaintenanceStatus is what the operator records of the defragmentation runs and the
// NOSPACE remediation, so a restarted operator continues a run where it stopped.
type MaintenanceStatus struct {
	// Run is the run in progress; absent when none is.
	// +optional
	Run *MaintenanceRun `json:"run,omitempty"`
	// LastScheduleTime is the schedule slot the last scheduled run was started for.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastDefragmentationTime is when the last run that defragmented members ended.
	// +optional
	LastDefragmentationTime *metav1.Time `json:"lastDefragmentationTime,omitempty"`
	// LastTrigger is why that run ran: Schedule, Threshold or NoSpace.
	// +optional
	LastTrigger string `json:"lastTrigger,omitempty"`
	// LastFreedBytes is what that run's defragmentations gave back, summed over members.
	// +optional
	LastFreedBytes int64 `json:"lastFreedBytes,omitempty"`
}

// MaintenanceRun is a defragmentation run (or NOSPACE remediation) in progress.
type MaintenanceRun struct {
	// Trigger is why it runs: Schedule, Threshold or NoSpace.
	Trigger string `json:"trigger"`
	// StartedAt is when it started.
	StartedAt metav1.Time `json:"startedAt"`
	// CompactedRevision is the revision the history was compacted at (NoSpace only).
	// +optional
	CompactedRevision int64 `json:"compactedRevision,omitempty"`
	// Defragmented are the IDs (hex) of the members defragmented so far.
	// +optional
	Defragmented []string `json:"defragmented,omitempty"`
	// FreedBytes is what the defragmentations so far gave back.
	// +optional
	FreedBytes int64 `json:"freedBytes,omitempty"`
}
