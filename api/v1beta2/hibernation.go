package v1beta2

// Hibernation: spec.size 0 on a cluster whose members keep their data on claims
// (spec.pod.persistentVolumeClaimSpec) stops every member pod and keeps the claims, etcd's
// membership and the records in status; a size above 0 brings the same members back on
// their claims (internal/planner/hibernate.go).

// ClusterPhaseHibernated is status.phase while a cluster is hibernated: spec.size is 0 and
// no member pod runs. It is not one of CoreOS's phases; a client written for CoreOS's
// operator that waits for Running keeps waiting, and one that alerts on Failed stays
// quiet, which is what a cluster stopped on purpose calls for.
const ClusterPhaseHibernated ClusterPhase = "Hibernated"

// Reasons of a cluster at size 0. Their values never change (see planner_reasons.go).
const (
	// ReasonHibernating: spec.size is 0; member pods are being stopped one at a time,
	// their claims and the membership kept.
	ReasonHibernating = "Hibernating"
	// ReasonHibernated: spec.size is 0 and no member pod runs; the claims hold the data
	// and status.members the members that come back when spec.size is raised.
	ReasonHibernated = "Hibernated"
	// ReasonHibernationRefused: spec.size is 0 but a member pod has no claim: stopping it
	// would lose its data, so nothing is stopped.
	ReasonHibernationRefused = "HibernationRefused"
	// ReasonClusterHibernated: a backup was due while its cluster is hibernated; the run is
	// skipped (nothing to dial, and nothing written since the cluster stopped).
	ReasonClusterHibernated = "ClusterHibernated"
	// EventReasonBackupSkipped: a due backup run was skipped (its cluster is hibernated).
	EventReasonBackupSkipped = "BackupSkipped"
)

// BackupConditionSkipped is the EtcdBackup condition that reports a due run skipped because
// its cluster is hibernated; it is removed by the next attempt, stored or failed. The
// Succeeded condition keeps reporting the last attempt.
const BackupConditionSkipped = "Skipped"

// Hibernates reports whether the spec asks for hibernation: size 0 with claims. Size 0
// without claims is refused at admission and by the planner, never a hibernation.
func (s *EtcdClusterSpec) Hibernates() bool {
	return s.Size == 0 && s.Pod != nil && s.Pod.PersistentVolumeClaimSpec != nil
}
