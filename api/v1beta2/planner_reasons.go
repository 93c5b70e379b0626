package v1beta2

// Reasons the planner (internal/planner) gives for its next step. They reach users as
// the cluster's status.reason, as condition reasons and in events, so their values never
// change; a rename here would break whoever matches on them. Grouped by the planner rule
// that gives them, in the order the planner applies its rules (see internal/planner/doc.go).
const (
	// ReasonPaused: spec.paused is set; nothing is changed.
	ReasonPaused = "Paused"
	// ReasonInvalidSpec: the size is negative (or 0 without claims), or the version cannot be
	// bootstrapped.
	ReasonInvalidSpec = "InvalidSpec"

	// ReasonForked: answering members disagree on the cluster ID or the membership for
	// longer than a membership change takes to reach them all: a fork (a member image
	// that forces a new cluster, say). Nothing is removed, replaced, recovered or deleted
	// until they agree again; the Forked condition names the members.
	ReasonForked = "Forked"
	// ReasonMembershipUnsettled: answering members disagree on the cluster ID or the
	// membership, for a few seconds so far; waiting, with nothing changed.
	ReasonMembershipUnsettled = "MembershipUnsettled"

	// ReasonRecoveryRecordInvalid: a recorded quorum-loss recovery is not one the operator
	// is carrying out; it is forgotten and nothing is deleted.
	ReasonRecoveryRecordInvalid = "RecoveryRecordInvalid"
	// ReasonRecovered: the recovered member serves the recorded revision; the old members'
	// pods are deleted.
	ReasonRecovered = "Recovered"
	// ReasonRecoveryAborted: a quorum-loss recovery is abandoned (opt-in withdrawn, a pod
	// gone, or the timeout passed); the old members are untouched.
	ReasonRecoveryAborted = "RecoveryAborted"
	// ReasonQuorumLossRecovery: a new one-member cluster is seeded from the survivor with
	// the most data (quorum lost past its grace, with the opt-in).
	ReasonQuorumLossRecovery = "QuorumLossRecovery"
	// ReasonRecovering: waiting for the recovered member to copy its data and serve.
	ReasonRecovering = "Recovering"

	// ReasonBootstrapping: a new cluster is created with all its initial members at once.
	ReasonBootstrapping = "Bootstrapping"
	// ReasonBootstrapUnknown: member pods exist but no initial cluster is recorded; waiting
	// for the cluster to form.
	ReasonBootstrapUnknown = "BootstrapUnknown"
	// ReasonCompletingBootstrap: an interrupted bootstrap gets its missing initial pods.
	ReasonCompletingBootstrap = "CompletingBootstrap"
	// ReasonCorrectingBootstrap: a bootstrap that never formed follows a corrected spec: a
	// pod's etcd image is set to the one the spec now names, or a pod whose etcd never ran
	// is recreated for fields only a new pod takes (node selection, TLS Secrets, claims).
	ReasonCorrectingBootstrap = "CorrectingBootstrap"
	// ReasonWaitingForClusterToForm: every initial pod exists; waiting for a member to answer.
	ReasonWaitingForClusterToForm = "WaitingForClusterToForm"

	// ReasonRecreatingPod: a member whose claim holds its data gets its pod back (same name
	// and ID), or its finished pod is deleted (not its claim) so it can come back.
	ReasonRecreatingPod = "RecreatingPod"

	// ReasonAllMembersLost: the cluster was formed but no member pod exists; only a restore
	// can help.
	ReasonAllMembersLost = "AllMembersLost"
	// ReasonRestoringFromBackup: every member's data is gone (no member answers, no pod,
	// no claim, for the quorum-loss grace) and the cluster is restored in place from a
	// backup (with the allow-restore-from-backup opt-in), or waits for the restored member.
	ReasonRestoringFromBackup = "RestoringFromBackup"
	// ReasonRestoredFromBackup: the member restored from a backup serves; the cluster
	// grows back to its size. Writes after the backup's revision are gone.
	ReasonRestoredFromBackup = "RestoredFromBackup"
	// ReasonBackupRestoreAborted: a restore from backup is abandoned (opt-in withdrawn,
	// its pod gone, or the timeout passed); only its own member's pod is deleted.
	ReasonBackupRestoreAborted = "BackupRestoreAborted"
	// ReasonBackupRestoreRecordInvalid: a recorded restore from backup is not one the
	// operator is carrying out; it is forgotten and nothing is deleted.
	ReasonBackupRestoreRecordInvalid = "BackupRestoreRecordInvalid"
	// ReasonMembersUnknown: no etcd endpoint answered its member list; waiting (also the
	// Available condition's reason then).
	ReasonMembersUnknown = "MembersUnknown"
	// ReasonNothingToRepair: Recovering is False: no member is being repaired or waited on.
	ReasonNothingToRepair = "NothingToRepair"
	// ReasonAtSize: Scaling is False: the voting members are spec.size and no learner is
	// in flight.
	ReasonAtSize = "AtSize"
	// ReasonUpToDate: Upgrading is False: every member runs spec.version.
	ReasonUpToDate = "UpToDate"
	// ReasonNoEndpoint: no endpoint has answered and no pod has been ready for the quorum
	// loss grace; no survivor can be named.
	ReasonNoEndpoint = "NoEndpoint"

	// ReasonNoVoters: the member list has no voting member; the planner will not reason
	// about it.
	ReasonNoVoters = "NoVoters"
	// ReasonNoLeader: a quorum is reachable but no leader is known; waiting for the
	// election (also the Available condition's reason without a reachable leader).
	ReasonNoLeader = "NoLeader"
	// ReasonPartialVisibility: fewer voters than a quorum answer but the leader does, so
	// the cluster has quorum beyond the operator's view; waiting.
	ReasonPartialVisibility = "PartialVisibility"
	// ReasonQuorumUnavailable: quorum is lost but still within its grace; waiting for
	// members to return.
	ReasonQuorumUnavailable = "QuorumUnavailable"
	// ReasonQuorumLost: quorum has been lost past its grace and recovery is not opted in;
	// nothing is changed.
	ReasonQuorumLost = "QuorumLost"
	// ReasonNoSurvivor: quorum is lost and no reachable voter has a running pod to recover
	// from.
	ReasonNoSurvivor = "NoSurvivor"

	// ReasonOrphanPod: a pod that a majority of the voters' own member lists agree has no
	// member is deleted.
	ReasonOrphanPod = "OrphanPod"

	// ReasonDegraded: too few voting members are alive, or the leader is not, for any
	// membership change; waiting.
	ReasonDegraded = "Degraded"
	// ReasonRemovalWouldLoseQuorum: the member to remove cannot go without leaving fewer
	// alive voters than a quorum; waiting.
	ReasonRemovalWouldLoseQuorum = "RemovalWouldLoseQuorum"
	// ReasonLearnerNotNeeded: a learner is removed because enough live voters exist for
	// the size.
	ReasonLearnerNotNeeded = "LearnerNotNeeded"
	// ReasonLearnerStuck: a learner not promoted within the learner timeout is removed.
	ReasonLearnerStuck = "LearnerStuck"
	// ReasonLearnerPodGone: an in-flight member whose pod is gone past its grace is removed.
	ReasonLearnerPodGone = "LearnerPodGone"
	// ReasonMemberPodGone: the pod of an in-flight member is gone, still within its grace;
	// waiting.
	ReasonMemberPodGone = "MemberPodGone"
	// ReasonStartingMember: the pod of a member just added is created so it joins.
	ReasonStartingMember = "StartingMember"
	// ReasonMemberWithoutPod: an in-flight member has no pod and none can be created; it
	// is waited for within its grace and removed after.
	ReasonMemberWithoutPod = "MemberWithoutPod"
	// ReasonMemberNotStarting: an in-flight member whose pod has not served past its grace
	// is removed.
	ReasonMemberNotStarting = "MemberNotStarting"
	// ReasonMemberStarting: waiting for an in-flight member's pod to start and answer.
	ReasonMemberStarting = "MemberStarting"
	// ReasonLearnerCatchingUp: waiting for a learner's raft log to catch up with the
	// leader's before it is promoted.
	ReasonLearnerCatchingUp = "LearnerCatchingUp"
	// ReasonPromotingLearner: a caught-up learner becomes a voting member.
	ReasonPromotingLearner = "PromotingLearner"

	// ReasonReplacingDeadMember: a voting member down past its grace is removed with its
	// pod so a new member can take its place.
	ReasonReplacingDeadMember = "ReplacingDeadMember"

	// ReasonScalingDown: a voting member is removed (or leadership moved off it first)
	// because there are more than the size (also the Scaling condition's reason).
	ReasonScalingDown = "ScalingDown"
	// ReasonNoLeaderTarget: leadership must move before a step but no alive voter can
	// take it; waiting.
	ReasonNoLeaderTarget = "NoLeaderTarget"

	// ReasonMemberUnhealthy: a voting member is down but within its grace; waiting for it
	// or for its grace to end.
	ReasonMemberUnhealthy = "MemberUnhealthy"

	// ReasonScalingUp: a learner is added because there are fewer voting members than the
	// size (also the Scaling condition's reason).
	ReasonScalingUp = "ScalingUp"

	// ReasonInvalidVersion: spec.version cannot be parsed; the upgrade is refused.
	ReasonInvalidVersion = "InvalidVersion"
	// ReasonVersionUnknown: neither a member nor its pod tells which version it runs;
	// waiting.
	ReasonVersionUnknown = "VersionUnknown"
	// ReasonUpgradeRefused: a member's version is outside the skew an upgrade allows
	// (also the Upgrading condition's reason then).
	ReasonUpgradeRefused = "UpgradeRefused"
	// ReasonUpgradeInProgress: waiting between two restarts of a rolling upgrade for the
	// last one to run, follow the leader and be Ready.
	ReasonUpgradeInProgress = "UpgradeInProgress"
	// ReasonUpgradeWaitsForSnapshot: a step to etcd 3.7 or later waits until every member
	// has taken a raft snapshot past the log written before all of them ran the previous
	// minor (etcd 3.7 cannot replay 3.5's log entries); also the Upgrading condition's
	// reason then.
	ReasonUpgradeWaitsForSnapshot = "UpgradeWaitsForSnapshot"
	// ReasonUpgradeBackupPending: a minor step waits for the backup the operator takes
	// before it (the one-shot EtcdBackup <cluster>-before-<version>-<uid>); also the
	// Upgrading condition's reason then.
	ReasonUpgradeBackupPending = "UpgradeBackupPending"
	// ReasonUpgradeBackupFailed: the backup before a minor step failed (the message says
	// why); no member is moved while it fails. The backup is retried with back-off;
	// the annotation etcd.database.coreos.com/upgrade-backup=skip starts the step without it.
	ReasonUpgradeBackupFailed = "UpgradeBackupFailed"
	// ReasonNoBackupTarget: no EtcdBackup names the cluster in spec.clusterRef, so no
	// backup is taken before a minor step: it proceeds (upgrade-backup auto, recorded in
	// status.upgradeBackup.skipped) or waits (upgrade-backup required). Operators with the
	// claim fallback back up to a claim of their own instead, and say NoBackupStorage
	// when they cannot.
	ReasonNoBackupTarget = "NoBackupTarget"
	// ReasonNoBackupStorage: no EtcdBackup names the cluster and no StorageClass is the
	// default, so the operator cannot create a claim for the backup before a minor step:
	// the step proceeds without one (upgrade-backup auto, a warning event, recorded in
	// status.upgradeBackup.skipped) or waits (upgrade-backup required).
	ReasonNoBackupStorage = "NoBackupStorage"
	// ReasonUpgradeBackupSkipped: the cluster opted out (upgrade-backup=skip); recorded in
	// status.upgradeBackup.skipped.
	ReasonUpgradeBackupSkipped = "UpgradeBackupSkipped"
	// EventReasonUpgradeBackupTaken: the backup before a minor step holds its snapshot
	// (recorded in status.upgradeBackup).
	EventReasonUpgradeBackupTaken = "UpgradeBackupTaken"
	// EventReasonUpgradeBackupPruned: an older claim the operator made for a backup before
	// a minor step was deleted with its EtcdBackup, a newer one having been taken.
	EventReasonUpgradeBackupPruned = "UpgradeBackupPruned"
	// ReasonUpgrading: a member is restarted on the new version, or leadership moved off
	// the leader first (also the Upgrading condition's reason).
	ReasonUpgrading = "Upgrading"
	// ReasonReconfiguring: a rolling reconfiguration step: a member's pod gets the
	// current spec (metadata patched in place, pod recreated on its claim, or a learner
	// added to replace it), or leadership moved off it first.
	ReasonReconfiguring = "Reconfiguring"
	// ReasonReconfigureInProgress: waiting between two steps of a rolling
	// reconfiguration for every member to follow the leader and be Ready.
	ReasonReconfigureInProgress = "ReconfigureInProgress"
	// ReasonReconfigureHeld: member pods lack spec changes only a new pod gets, but some
	// pod lacks a change that cannot be rolled out yet (TLS secrets, cluster domain),
	// which a new pod would take up; no member is restarted.
	ReasonReconfigureHeld = "ReconfigureHeld"
	// ReasonTLSChangeRefused: member pods run on other TLS Secrets than the spec names,
	// and the change is not one a rollout can make safely (a scheme change, or a
	// rotation whose certificates do not verify both ways); no member is restarted. Also
	// the SpecApplied condition's reason then.
	ReasonTLSChangeRefused = "TLSChangeRefused"
	// ReasonReady: nothing to do; every member is healthy on the desired version.
	ReasonReady = "Ready"

	// ReasonNoQuorum: the Available condition's reason when fewer voters than a quorum
	// answer.
	ReasonNoQuorum = "NoQuorum"
	// ReasonQuorumAvailable: the Available condition's reason when a quorum of voters and
	// the leader answer.
	ReasonQuorumAvailable = "QuorumAvailable"
)

// Reasons of moving members off cordoned nodes (internal/planner/cordon.go).
const (
	// ReasonLeavingCordonedNode: a member's pod is on a cordoned node (being drained);
	// a learner is added on another node, promoted, and only then the member removed.
	ReasonLeavingCordonedNode = "LeavingCordonedNode"
	// ReasonNoNodeToLeaveTo: a member's pod is on a cordoned node but no other Ready,
	// schedulable node could take its replacement; nothing is moved.
	ReasonNoNodeToLeaveTo = "NoNodeToLeaveTo"
)
