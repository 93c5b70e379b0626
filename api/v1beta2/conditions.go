package v1beta2

// Condition types this operator adds to CoreOS's four. Each says something a user could
// otherwise learn only from the pods, the operator's log or a diff of the spec.
const (
	// ClusterConditionPodsHealthy is True when every member pod runs its etcd container.
	// False copies why not from the pods: the scheduler's reason (Unschedulable) or the
	// kubelet's (ErrImagePull, ImagePullBackOff, CreateContainerConfigError,
	// CrashLoopBackOff with the last termination, ...), or PodsStarting while pods are
	// merely on their way.
	ClusterConditionPodsHealthy ClusterConditionType = "PodsHealthy"
	// ClusterConditionReconciled is False when the operator could not observe the cluster
	// or its last step failed (reason TLSSecretError, ObserveFailed or ActionFailed); the
	// step is retried with a growing delay.
	ClusterConditionReconciled ClusterConditionType = "Reconciled"
	// ClusterConditionSpecApplied is False when running members were created from a spec
	// that differs from the current one in fields that only shape new pods (repository,
	// TLS secrets, pod policy, claim spec): the change applies to new members only.
	ClusterConditionSpecApplied ClusterConditionType = "SpecApplied"
	// ClusterConditionSpaceAvailable is False while etcd's NOSPACE alarm is raised: a
	// member's database reached its quota and the cluster takes no writes (reads and
	// deletes only) until space is freed and the alarm disarmed. The message names the
	// members and what to do. Not set while the alarm list cannot be read (no quorum).
	ClusterConditionSpaceAvailable ClusterConditionType = "SpaceAvailable"
	// ClusterConditionDataConsistent is False while etcd's CORRUPT alarm is raised: the
	// corruption check found members whose data differs from their peers'. The message
	// names them and what to do.
	ClusterConditionDataConsistent ClusterConditionType = "DataConsistent"
)

// Reasons of the conditions above, and of a cluster the operator will not run.
const (
	// ReasonUnsupportedVersion: spec.version is older than any etcd the operator can run
	// (planner.MinSupportedVersion). Nothing is created or changed until it is raised.
	ReasonUnsupportedVersion = "UnsupportedVersion"
	// ReasonPodsRunning: every member pod runs its etcd container.
	ReasonPodsRunning = "PodsRunning"
	// ReasonPodsStarting: some member pods are scheduled or starting, none reported a
	// failure.
	ReasonPodsStarting = "PodsStarting"
	// ReasonNoPods: the cluster has no member pods.
	ReasonNoPods = "NoPods"
	// ReasonReconciled: the cluster was observed and the last step succeeded.
	ReasonReconciled = "Reconciled"
	// ReasonTLSSecretError: a TLS Secret the spec names is missing or unusable.
	ReasonTLSSecretError = "TLSSecretError"
	// ReasonObserveFailed: the operator could not read the cluster's pods or services.
	ReasonObserveFailed = "ObserveFailed"
	// ReasonActionFailed: the planned step failed; it is retried with back-off.
	ReasonActionFailed = "ActionFailed"
	// ReasonSpecApplied: every member was created from the current spec.
	ReasonSpecApplied = "SpecApplied"
	// ReasonAppliesToNewMembersOnly: the spec changed in fields running members cannot
	// take without being recreated; members created from now on get the new values.
	ReasonAppliesToNewMembersOnly = "AppliesToNewMembersOnly"
	// ReasonNoAlarm: etcd reports no alarm of the condition's kind (SpaceAvailable,
	// DataConsistent True). Also the reason of the event when such an alarm clears.
	ReasonNoAlarm = "NoAlarm"
	// ReasonNoSpaceAlarm: etcd raised NOSPACE (SpaceAvailable False).
	ReasonNoSpaceAlarm = "NoSpaceAlarm"
	// ReasonCorruptAlarm: etcd raised CORRUPT (DataConsistent False).
	ReasonCorruptAlarm = "CorruptAlarm"
)

// ClusterConditionOffCordonedNodes is False while member pods run on cordoned nodes (a
// node drain): reason LeavingCordonedNode while the operator moves them to other nodes
// one at a time (a learner added and promoted before the member goes), NoNodeToLeaveTo
// when no other node can take them, so a drain that waits on the PodDisruptionBudget
// says why. True (reason NoMemberOnCordonedNode) once none is left; absent until a
// member was first found on a cordoned node.
const ClusterConditionOffCordonedNodes ClusterConditionType = "OffCordonedNodes"

// ReasonNoMemberOnCordonedNode: no member pod runs on a cordoned node.
const ReasonNoMemberOnCordonedNode = "NoMemberOnCordonedNode"

// ClusterConditionForked is True while answering members disagree on the cluster ID or the
// membership (reason Forked; the message names the members outside the largest agreeing
// group and what they disagree on): the operator removes, replaces, recovers and deletes
// nothing of the cluster meanwhile. False (reason NotForked) once they agree again; absent
// until a fork was first seen.
const ClusterConditionForked ClusterConditionType = "Forked"

// ReasonNotForked: every answering member agrees on the cluster ID and the membership.
const ReasonNotForked = "NotForked"
