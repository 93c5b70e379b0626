package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Maintenance is when the operator defragments the members' databases: on a schedule,
// past a threshold, or both. A run defragments one member at a time, followers first and
// the leader last after moving leadership, and only when no other step is in progress.
// Whatever is set here, a NOSPACE alarm is remediated (compaction, defragmentation of
// every member, then disarm once the space is back).
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.defragmentationSchedule)",message="timeZone needs defragmentationSchedule",fieldPath=".timeZone"
type Maintenance struct {
	// DefragmentationSchedule is a cron schedule, as a CronJob's: five fields (minute hour
	// day-of-month month day-of-week, e.g. "0 3 * * 0" for Sundays at 03:00) or a macro
	// (@daily, @weekly, "@every 24h"). After slots missed while the operator was down, one
	// run catches up.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9a-zµ.]+|[0-9A-Za-z*?/,-]+( +[0-9A-Za-z*?/,-]+){4})$')",message="defragmentationSchedule must be five cron fields (minute hour day-of-month month day-of-week) or a macro such as @daily or @every 24h"
	DefragmentationSchedule string `json:"defragmentationSchedule,omitempty"`
	// TimeZone is the IANA time zone the schedule is read in, e.g. Europe/Berlin; default
	// UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
	// DefragmentationThresholdPercent defragments a member whose database is larger than
	// this percentage of its in-use size (150: a third of the file is free pages), when at
	// least 1 MiB would be freed, at most once every 10 minutes.
	// +optional
	// +kubebuilder:validation:Minimum=101
	// +kubebuilder:validation:Maximum=10000
	DefragmentationThresholdPercent int32 `json:"defragmentationThresholdPercent,omitempty"`
}

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
