package v1beta2

// Reasons the controllers write into conditions and events, one constant each, so that a
// reason is spelled once and its meaning is documented where users (and tests) look it
// up. The reasons of the EtcdCluster conditions this operator adds are in conditions.go.

// Reasons of an EtcdCluster the operator refuses or cannot build.
const (
	// (ReasonInvalidSpec, for a spec the operator refuses to act on, is in
	// planner_reasons.go: the planner gives it too.)
	// ReasonRestoreSourceRejected: a cluster carries a restore annotation that this
	// operator cannot trace to an EtcdRestore of its namespace; its members are not created.
	ReasonRestoreSourceRejected = "RestoreSourceRejected"
	// ReasonDeletionRefused is the event reason for an object the cluster would have
	// deleted but does not control.
	ReasonDeletionRefused = "DeletionRefused"
	// ReasonMembersNotReady: the Available condition is False although etcd has a
	// quorum, because fewer than a quorum of voting members have a Ready pod.
	ReasonMembersNotReady = "MembersNotReady"
	// ReasonMarkerKeyMissing: a quorum-loss recovery or a total-loss restore is due but
	// the operator has no signing key, so it could never prove the new member's pod is
	// its own; the step is refused (nothing is created or deleted) until the key exists.
	ReasonMarkerKeyMissing = "MarkerKeyMissing"
)

// Reasons of the events the EtcdCluster controller emits for the steps it takes. They
// name what happened, not the planner's reason for it (which the message carries).
const (
	EventReasonBootstrapping         = "Bootstrapping"
	EventReasonPodRecreated          = "PodRecreated"
	EventReasonMemberPodCreated      = "MemberPodCreated"
	EventReasonMemberAdded           = "MemberAdded"
	EventReasonMemberPromoted        = "MemberPromoted"
	EventReasonLeaderMoved           = "LeaderMoved"
	EventReasonMemberRemoved         = "MemberRemoved"
	EventReasonMemberReplaced        = "MemberReplaced"
	EventReasonPodDeleted            = "PodDeleted"
	EventReasonMemberUpgrading       = "MemberUpgrading"
	EventReasonBootstrapPodCorrected = "BootstrapPodCorrected"
	// EventReasonPodReconfigured: a member pod got the spec's labels and annotations in
	// place (rolling reconfiguration).
	EventReasonPodReconfigured = "PodReconfigured"
	// ReasonRollingOut: the SpecApplied condition while member pods are moved onto the
	// current spec one member at a time; the message says which fields and how far.
	ReasonRollingOut = "RollingOut"
	// EventReasonPeerURLUpdated: a member's peer URL was updated to https through etcd's
	// member update (turning TLS on for a running cluster).
	EventReasonPeerURLUpdated = "PeerURLUpdated"
	// EventReasonInvalidAnnotation: an annotation of the cluster is not used as written
	// (the message says what is used instead).
	EventReasonInvalidAnnotation = "InvalidAnnotation"
	// EventReasonForceNewCluster: a quorum-loss recovery restarts the cluster from one
	// surviving member.
	EventReasonForceNewCluster = "ForceNewCluster"
	// EventReasonRecovered: a quorum-loss recovery finished.
	EventReasonRecovered = "Recovered"
	// EventReasonAdoptedCoreOSCluster: the running etcd cluster whose member pods CoreOS
	// etcd-operator created was taken over as it runs (members from etcd's own list).
	EventReasonAdoptedCoreOSCluster = "AdoptedCoreOSCluster"
)

// BackupConditionSucceeded is the EtcdBackup condition that reports the last attempt.
const BackupConditionSucceeded = "Succeeded"

// Reasons of the EtcdBackup Succeeded condition. The backup pod of a PVC backup reports
// its failures with the same reasons (backup.JobResult).
const (
	ReasonBackupSucceeded        = "BackupSucceeded"
	ReasonUnsupportedStorageType = "UnsupportedStorageType"
	ReasonBackupInvalidSpec      = "InvalidSpec"
	ReasonSecretError            = "SecretError"
	ReasonAccessDenied           = "AccessDenied"
	ReasonBucketNotFound         = "BucketNotFound"
	ReasonStorageError           = "StorageError"
	ReasonSnapshotFailed         = "SnapshotFailed"
	ReasonTimeout                = "Timeout"
	// ReasonTLSError: the members' certificate is not trusted, or they refuse the
	// client's (spec.clientTLSSecret).
	ReasonTLSError = "TLSError"
	// ReasonBackupPodFailed: the backup pod of a PVC backup failed without saying why.
	ReasonBackupPodFailed = "BackupPodFailed"
	// ReasonEndpointsRefused: spec.etcdEndpoints do not name a cluster of the backup's
	// namespace (and external endpoints are not allowed); nothing was dialled.
	ReasonEndpointsRefused = "EndpointsRefused"
	// ReasonClusterNotFound: spec.clusterRef names no EtcdCluster of the namespace.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonS3EndpointRefused: spec.s3.endpoint is, or resolves to, an address the
	// operator does not dial (loopback, link-local, unspecified, the API server's) and
	// the operator has no --allow-s3-endpoint exception for it; nothing was sent there.
	ReasonS3EndpointRefused = "S3EndpointRefused"
	// ReasonLimitExceeded: the S3 listing, the backup or its decompression went past
	// the operator's limits (keys, pages, bytes, decompression ratio).
	ReasonLimitExceeded = "LimitExceeded"
	// EventReasonBackupNowDeferred: a backup-now value came sooner than the operator
	// takes them (one per EtcdBackup per 5 minutes); it runs when the spacing has passed.
	EventReasonBackupNowDeferred = "BackupNowDeferred"
)

// RestoreConditionSucceeded is the EtcdRestore condition: Unknown while the new cluster
// starts, True once it is Available, False when the restore is refused or failed.
const RestoreConditionSucceeded = "Succeeded"

// Reasons of the EtcdRestore condition (besides the backup reasons shared with
// EtcdBackup: UnsupportedStorageType, InvalidSpec, SecretError, AccessDenied,
// BucketNotFound, StorageError).
const (
	ReasonClusterExists    = "ClusterExists"
	ReasonBackupNotFound   = "BackupNotFound"
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonInvalidSnapshot: the backup is not a restorable etcd snapshot (truncated,
	// damaged, or something else altogether), whether or not it has a checksum.
	ReasonInvalidSnapshot   = "InvalidSnapshot"
	ReasonRestoring         = "Restoring"
	ReasonRestoreStepFailed = "RestoreStepFailed"
	ReasonRestoreComplete   = "Restored"
	// ReasonReplacingCluster: the existing cluster is being deleted (replacement opted
	// into with the EtcdRestore's replace-existing-cluster annotation).
	ReasonReplacingCluster = "ReplacingCluster"
	// ReasonNoBackupMatches: none of the referenced EtcdBackup's objects satisfies the
	// restore's selection (newest-before, min-revision); nothing was touched.
	ReasonNoBackupMatches = "NoBackupMatches"
)

// Reasons of the events of an EtcdRestore.
const (
	// EventReasonClusterCreated: the restore created its EtcdCluster.
	EventReasonClusterCreated = "ClusterCreated"
	// EventReasonDeletedCluster: the restore deleted the cluster it replaces.
	EventReasonDeletedCluster = "DeletedCluster"
	// EventReasonBackupChosen: the restore chose an object of the EtcdBackup it names.
	EventReasonBackupChosen = "BackupChosen"
)

// BackupConditionVerified is the EtcdBackup condition that reports the last verification:
// True when the verified backup restored and served what was recorded, False naming the
// object and what failed.
const BackupConditionVerified = "Verified"

// Reasons of the Verified condition. A backup that cannot be read or restored also gets
// the restore reasons ReasonBackupNotFound, ReasonChecksumMismatch and
// ReasonInvalidSnapshot, as an EtcdRestore of it would.
const (
	ReasonBackupVerified = "BackupVerified"
	// ReasonVerificationInvalidSpec: the verification settings cannot be followed.
	ReasonVerificationInvalidSpec = "InvalidVerificationSpec"
	// ReasonEtcdDidNotStart: the restored member did not serve within the time allowed.
	ReasonEtcdDidNotStart = "EtcdDidNotStart"
	// ReasonRevisionMismatch: the restored member serves an older revision than recorded.
	ReasonRevisionMismatch = "RevisionMismatch"
	// ReasonKeyCountMismatch: the restored member holds another number of keys at the
	// recorded revision than the cluster did when the backup was taken.
	ReasonKeyCountMismatch = "KeyCountMismatch"
	// ReasonVerificationFailed: the verification pod failed or timed out for another reason
	// (the message says which).
	ReasonVerificationFailed = "VerificationFailed"
	// ReasonNothingToVerify: no backup has been stored yet.
	ReasonNothingToVerify = "NothingToVerify"
)
