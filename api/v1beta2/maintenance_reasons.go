package v1beta2

// Reasons of the space-management steps (internal/planner/maintenance.go): scheduled and
// threshold defragmentation, NOSPACE remediation and CORRUPT member replacement. They are
// the reasons of the planner's actions, of the Maintenance condition and of the events.
const (
	// ReasonDefragmenting: a member is defragmented, or leadership is moved off the leader
	// before it is, in a scheduled or threshold-triggered run.
	ReasonDefragmenting = "Defragmenting"
	// ReasonMaintenanceInProgress: a maintenance run waits between two members for every
	// member to answer and follow the leader again.
	ReasonMaintenanceInProgress = "MaintenanceInProgress"
	// ReasonDefragmentationFinished: a run defragmented every member it had to.
	ReasonDefragmentationFinished = "DefragmentationFinished"
	// ReasonNoSpaceRemediating: NOSPACE is raised and the operator frees space: compacts
	// the history, defragments every member not yet 10% below its quota, then disarms
	// the alarm.
	ReasonNoSpaceRemediating = "NoSpaceRemediating"
	// ReasonNoSpaceDataTooLarge: every member was compacted and defragmented and a
	// database is still too close to its quota: the data itself is too big. The alarm
	// stays raised; raise the quota or delete keys.
	ReasonNoSpaceDataTooLarge = "NoSpaceDataTooLarge"
	// ReasonAlarmDisarmed: the operator disarmed an alarm once it was proven resolved
	// (space back below the quota with margin, or the corrupt member gone).
	ReasonAlarmDisarmed = "AlarmDisarmed"
	// ReasonReplacingCorruptMember: a member etcd's CORRUPT alarm names is removed (or
	// leadership moved off it first) so that a new member syncs from the healthy ones.
	ReasonReplacingCorruptMember = "ReplacingCorruptMember"
	// ReasonCorruptMemberNotReplaceable: the members CORRUPT names cannot be replaced
	// safely now (they are not a minority, or the others lack an alive quorum).
	ReasonCorruptMemberNotReplaceable = "CorruptMemberNotReplaceable"
)
