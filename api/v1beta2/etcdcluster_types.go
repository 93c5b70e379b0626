package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// DefaultRepository is CoreOS's default image repository; the image is
	// <repository>:v<version>.
	DefaultRepository = "quay.io/coreos/etcd"
	// DefaultVersion is the etcd version a cluster gets when spec.version is empty.
	DefaultVersion = "3.6.16"
	// DefaultBusyboxImage is kept for compatibility; our pods need no busybox.
	DefaultBusyboxImage = "busybox:1.28.0-glibc"

	// EtcdClientPort and EtcdPeerPort are fixed, as in CoreOS's operator.
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
)

// EtcdClusterSpec is the desired state of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.TLS) || !has(self.TLS.static) || !has(self.TLS.static.member) || ((has(self.TLS.static.member.serverSecret) && size(self.TLS.static.member.serverSecret) > 0) == (has(self.TLS.static.operatorSecret) && size(self.TLS.static.operatorSecret) > 0))",message="TLS.static.operatorSecret must be set if and only if TLS.static.member.serverSecret is set",fieldPath=".TLS.static.operatorSecret"
// +kubebuilder:validation:XValidation:rule="self.size > 0 || (has(self.pod) && has(self.pod.persistentVolumeClaimSpec))",message="size 0 (hibernation) needs pod.persistentVolumeClaimSpec: members keep their data only on claims, and without them stopping the pods would delete it",fieldPath=".size"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.TLS) || !(has(oldSelf.TLS.static) || has(oldSelf.TLS.auto)) || !has(self.TLS) || !has(self.TLS.certManager)",message="TLS.certManager may not replace TLS.static or TLS.auto on an existing cluster: its members would have to trust cert-manager's CA before any of them presents it, which the operator cannot do from Secrets it does not hold (restore a backup into a new cluster with TLS.certManager instead)",fieldPath=".TLS"
// +kubebuilder:validation:XValidation:rule="(self.size > 0 && oldSelf.size > 0) || (has(self.TLS) == has(oldSelf.TLS) && (!has(self.TLS) || self.TLS == oldSelf.TLS) && (has(self.pod) && has(self.pod.ClusterDomain)) == (has(oldSelf.pod) && has(oldSelf.pod.ClusterDomain)) && (!has(self.pod) || !has(self.pod.ClusterDomain) || self.pod.ClusterDomain == oldSelf.pod.ClusterDomain))",message="TLS and pod.ClusterDomain may not change while size is 0, nor in the update that sets size to 0 or raises it from 0: hibernated members all come back at once on the spec, so change them while the cluster runs, where the change is rolled out (or held) one member at a time",fieldPath=".size"
type EtcdClusterSpec struct {
	// Size is the number of voting members. Odd sizes from 1 to 7 are recommended: an even
	// size tolerates no more failures than the odd size below it. Sizes above 7 are
	// accepted with a warning, as CoreOS's operator did; above 99 they are refused: every
	// write waits for a majority, so such a cluster is only slower, and a typo (or a
	// hostile tenant) must not ask for thousands of pods.
	// 0 hibernates a cluster whose members keep their data on claims
	// (pod.persistentVolumeClaimSpec; refused without): every member pod is stopped, the
	// claims and the membership are kept, and status.phase reads Hibernated. Raising the
	// size brings the same members back on their data first, then scales to the new size.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=99
	Size int `json:"size"`

	// Repository is the etcd image repository; the image used is <repository>:v<version>.
	// Defaults to quay.io/coreos/etcd.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Repository string `json:"repository,omitempty"`

	// Version is the etcd version to run, e.g. 3.6.16; a leading "v" is accepted and
	// ignored. Changing it performs a rolling upgrade, one member at a time; one minor down
	// from 3.6 or later is a rolling downgrade through etcd's downgrade API. Skipping a minor
	// version either way is refused with a status condition.
	// +optional
	// +kubebuilder:validation:Pattern=`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// Paused stops the operator from touching the cluster's members, pods and services.
	// status.controlPaused mirrors it.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Pod customises the member pods.
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`

	// TLS configures TLS for peer and client traffic. Its JSON name is capitalised, as in
	// CoreOS's operator.
	// +optional
	TLS *TLSPolicy `json:"TLS,omitempty"`
}

// PodPolicy customises the member pods. Options CoreOS's API has no field for are
// annotations of the EtcdCluster holding v1's fields (lists and objects as JSON), named
// etcd.database.coreos.com/ then pod-image-pull-secrets, pod-priority-class-name,
// pod-topology-spread-constraints, pod-service-account-name and pod-dns-config; and for
// the client Service client-service-type, client-service-annotations,
// client-service-labels, client-service-load-balancer-source-ranges,
// client-service-external-traffic-policy, client-service-ip-family-policy and
// client-service-ip-families.
type PodPolicy struct {
	// Labels are added to every member pod. Keys "app" and those starting with "etcd_" are
	// reserved for the operator.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'app' && !k.startsWith('etcd_'))",message="label keys 'app' and 'etcd_*' are reserved"
	Labels map[string]string `json:"labels,omitempty"`

	// NodeSelector must match a node's labels for a member pod to be scheduled there.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// AntiAffinity, when true, forbids two members of this cluster on one node (required
	// pod anti-affinity on topology key kubernetes.io/hostname). Deprecated: use Affinity.
	// +optional
	AntiAffinity bool `json:"antiAffinity,omitempty"`

	// Affinity is the member pods' scheduling affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Resources of the etcd container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Tolerations of the member pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// EtcdEnv is extra environment for the etcd container, e.g. ETCD_QUOTA_BACKEND_BYTES.
	// Variables etcd reads as flags (ETCD_*) are an allowlist: only settings that tune how
	// a member runs (quota, compaction, snapshot count, heartbeat and election timeouts,
	// request limits, gRPC keepalive, log level and format, consistency checks, feature
	// gates, ...) and cannot change its identity, data location, log outputs, TLS policy
	// or exposure (pprof, extra listeners). Other names are the image's own, except those
	// the operator sets and GODEBUG, the proxy variables and SSL_CERT_FILE/DIR.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:XValidation:rule="self.name.startsWith('ETCD_') ? self.name in ['ETCD_QUOTA_BACKEND_BYTES', 'ETCD_AUTO_COMPACTION_MODE', 'ETCD_AUTO_COMPACTION_RETENTION', 'ETCD_BACKEND_BATCH_LIMIT', 'ETCD_BACKEND_BATCH_INTERVAL', 'ETCD_BACKEND_BBOLT_FREELIST_TYPE', 'ETCD_SNAPSHOT_COUNT', 'ETCD_MAX_SNAPSHOTS', 'ETCD_MAX_WALS', 'ETCD_EXPERIMENTAL_COMPACTION_BATCH_LIMIT', 'ETCD_COMPACTION_BATCH_LIMIT', 'ETCD_EXPERIMENTAL_COMPACTION_SLEEP_INTERVAL', 'ETCD_COMPACTION_SLEEP_INTERVAL', 'ETCD_EXPERIMENTAL_BOOTSTRAP_DEFRAG_THRESHOLD_MEGABYTES', 'ETCD_BOOTSTRAP_DEFRAG_THRESHOLD_MEGABYTES', 'ETCD_EXPERIMENTAL_SNAPSHOT_CATCHUP_ENTRIES', 'ETCD_SNAPSHOT_CATCHUP_ENTRIES', 'ETCD_HEARTBEAT_INTERVAL', 'ETCD_ELECTION_TIMEOUT', 'ETCD_PRE_VOTE', 'ETCD_EXPERIMENTAL_MAX_LEARNERS', 'ETCD_MAX_LEARNERS', 'ETCD_MAX_REQUEST_BYTES', 'ETCD_MAX_TXN_OPS', 'ETCD_MAX_CONCURRENT_STREAMS', 'ETCD_GRPC_KEEPALIVE_MIN_TIME', 'ETCD_GRPC_KEEPALIVE_INTERVAL', 'ETCD_GRPC_KEEPALIVE_TIMEOUT', 'ETCD_LOG_LEVEL', 'ETCD_LOG_FORMAT', 'ETCD_METRICS', 'ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK', 'ETCD_EXPERIMENTAL_CORRUPT_CHECK_TIME', 'ETCD_CORRUPT_CHECK_TIME', 'ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_ENABLED', 'ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_TIME', 'ETCD_COMPACT_HASH_CHECK_TIME', 'ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL', 'ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL', 'ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION', 'ETCD_WARNING_APPLY_DURATION', 'ETCD_EXPERIMENTAL_WARNING_UNARY_REQUEST_DURATION', 'ETCD_WARNING_UNARY_REQUEST_DURATION', 'ETCD_EXPERIMENTAL_ENABLE_LEASE_CHECKPOINT', 'ETCD_EXPERIMENTAL_ENABLE_LEASE_CHECKPOINT_PERSIST', 'ETCD_EXPERIMENTAL_MEMORY_MLOCK', 'ETCD_MEMORY_MLOCK', 'ETCD_EXPERIMENTAL_TXN_MODE_WRITE_WITH_SHARED_BUFFER', 'ETCD_EXPERIMENTAL_STOP_GRPC_SERVICE_ON_DEFRAG', 'ETCD_EXPERIMENTAL_DOWNGRADE_CHECK_TIME', 'ETCD_DOWNGRADE_CHECK_TIME', 'ETCD_FEATURE_GATES', 'ETCD_AUTH_TOKEN', 'ETCD_AUTH_TOKEN_TTL', 'ETCD_BCRYPT_COST'] : !(self.name in ['POD_IP', 'POD_NAME', 'GODEBUG', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR'])",messageExpression="self.name + (self.name.startsWith('ETCD_') ? ' may not be set: only etcd settings that cannot change the member identity, data location, log outputs or TLS policy are allowed (e.g. ETCD_QUOTA_BACKEND_BYTES, ETCD_SNAPSHOT_COUNT, ETCD_HEARTBEAT_INTERVAL, ETCD_LOG_LEVEL)' : ' may not be set: the operator sets it, or it changes how the member trusts or routes its connections')"
	EtcdEnv []corev1.EnvVar `json:"etcdEnv,omitempty"`

	// PersistentVolumeClaimSpec, when set, gives each member a PVC (named like its pod)
	// for its data instead of an emptyDir.
	// +optional
	PersistentVolumeClaimSpec *corev1.PersistentVolumeClaimSpec `json:"persistentVolumeClaimSpec,omitempty"`

	// Annotations are added to every member pod. The key "etcd.version" is reserved.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!('etcd.version' in self)",message="annotation key 'etcd.version' is reserved"
	Annotations map[string]string `json:"annotations,omitempty"`

	// BusyboxImage is accepted for compatibility and ignored: member pods need no shell or
	// init container to wait for DNS.
	// +optional
	BusyboxImage string `json:"busyboxImage,omitempty"`

	// SecurityContext of the member pods. Fields left unset get what the Pod Security
	// "restricted" profile asks for: runAsNonRoot, runAsUser, runAsGroup and fsGroup 65532
	// (runAsGroup only when runAsUser is unset; runAsNonRoot not when runAsUser is 0), and
	// seccompProfile RuntimeDefault. Containers never escalate privileges and drop all
	// capabilities.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// DNSTimeoutInSecond bounds how long a new member waits for its own DNS record before
	// giving up; 0 waits forever. The operator never removes a member because its record is
	// late. At most 86400 (a day): a longer wait is indistinguishable from waiting forever,
	// which 0 asks for, and would keep a hung member from being restarted for as long.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	DNSTimeoutInSecond int64 `json:"DNSTimeoutInSecond,omitempty"`

	// ClusterDomain is the cluster's DNS domain, e.g. cluster.local. Empty means members
	// are addressed as <pod>.<cluster>.<namespace>.svc, which resolves in any domain.
	// It must be a DNS name (RFC 1123: lower-case labels of letters, digits and '-', joined
	// by dots; a dot at either end is allowed): the operator dials members under it, so it may
	// not carry a user, port, path or fragment ('@', ':', '/', '#') that would point those
	// connections elsewhere.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^\.?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?$`
	ClusterDomain string `json:"ClusterDomain,omitempty"`

	// HostAliases is refused: a member's name must resolve to that member alone, and
	// /etc/hosts entries could point its peers' names elsewhere. (Declared only to say so
	// at admission; the pods never get it.)
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",message="hostAliases may not be set: a member's peers must resolve to the members themselves"
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`

	// Volumes is refused: a member pod's volumes are its data directory and its
	// certificates, which the operator alone mounts.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",message="volumes may not be set: only the operator mounts volumes into member pods (data directory safety)"
	Volumes []RefusedVolume `json:"volumes,omitempty"`

	// VolumeMounts is refused, as volumes is: nothing else is mounted beside or over the
	// data directory.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",message="volumeMounts may not be set: only the operator mounts volumes into member pods (data directory safety)"
	VolumeMounts []RefusedVolume `json:"volumeMounts,omitempty"`
}

// RefusedVolume stands for a volume or volume mount in spec.pod, which is refused at
// admission; only its name is described.
// +kubebuilder:pruning:PreserveUnknownFields
type RefusedVolume struct {
	// Name of the volume.
	// +optional
	Name string `json:"name,omitempty"`
}

// TLSPolicy configures TLS for the cluster.
// +kubebuilder:validation:XValidation:rule="(has(self.static) ? 1 : 0) + (has(self.auto) ? 1 : 0) + (has(self.certManager) ? 1 : 0) <= 1",message="TLS.static, TLS.auto and TLS.certManager are mutually exclusive"
type TLSPolicy struct {
	// Static uses certificates the user put in Secrets.
	// +optional
	Static *StaticTLS `json:"static,omitempty"`
	// Auto has the operator issue and renew the certificates (tls_auto.go); not in
	// CoreOS's operator.
	// +optional
	Auto *AutoTLS `json:"auto,omitempty"`
	// CertManager has cert-manager issue the certificates (tls_certmanager.go); not in
	// CoreOS's operator.
	// +optional
	CertManager *CertManagerTLS `json:"certManager,omitempty"`
}

// StaticTLS names Secrets holding certificates.
type StaticTLS struct {
	// Member holds the members' peer and server certificates.
	// +optional
	Member *MemberSecret `json:"member,omitempty"`
	// OperatorSecret is the client certificate the operator uses to talk to the members
	// (keys etcd-client.crt, etcd-client.key, etcd-client-ca.crt). Set iff
	// member.serverSecret is set.
	// +optional
	OperatorSecret string `json:"operatorSecret,omitempty"`
}

// MemberSecret names the members' certificate Secrets.
type MemberSecret struct {
	// PeerSecret holds peer.crt, peer.key and peer-ca.crt for member-to-member traffic.
	// +optional
	PeerSecret string `json:"peerSecret,omitempty"`
	// ServerSecret holds server.crt, server.key and server-ca.crt for client traffic.
	// +optional
	ServerSecret string `json:"serverSecret,omitempty"`
}

// ClusterPhase is the coarse state of a cluster.
type ClusterPhase string

const (
	ClusterPhaseNone     ClusterPhase = ""
	ClusterPhaseCreating ClusterPhase = "Creating"
	ClusterPhaseRunning  ClusterPhase = "Running"
	ClusterPhaseFailed   ClusterPhase = "Failed"
)

// ClusterConditionType names a condition, as in CoreOS's operator.
type ClusterConditionType string

const (
	ClusterConditionAvailable  ClusterConditionType = "Available"
	ClusterConditionRecovering ClusterConditionType = "Recovering"
	ClusterConditionScaling    ClusterConditionType = "Scaling"
	ClusterConditionUpgrading  ClusterConditionType = "Upgrading"
)

// ClusterCondition is one aspect of the cluster's state. Times are RFC 3339 strings, as in
// CoreOS's operator.
type ClusterCondition struct {
	// Type of the condition: Available, Recovering, Scaling or Upgrading, and, added by this
	// operator, PodsHealthy (why member pods cannot run), SpecApplied (spec changes that
	// only new members get), Reconciled (the operator's last observation or step failed),
	// and SpaceAvailable and DataConsistent (etcd's NOSPACE and CORRUPT alarms).
	Type ClusterConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastUpdateTime is when the condition was last written (RFC 3339).
	// +optional
	LastUpdateTime string `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when Status last changed (RFC 3339).
	// +optional
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	// Reason is a CamelCase word for the condition's cause.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains the condition for humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// MembersStatus lists member pods by readiness.
type MembersStatus struct {
	// Ready members: their pods are ready and serving.
	// +optional
	Ready []string `json:"ready,omitempty"`
	// Unready members.
	// +optional
	Unready []string `json:"unready,omitempty"`
	// Leader is the name of the member etcd answered is the leader; empty when none is
	// known.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Leader string `json:"leader,omitempty"`
	// Details are every member's ID, role, version, database sizes and health, by name,
	// refreshed while the cluster is paused too; at most spec.size + 8, the first by name.
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Details []MemberDetail `json:"details,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster.
type EtcdClusterStatus struct {
	// Phase is "", Creating, Running, Failed, or Hibernated (spec.size 0, no member pod running). Always serialised, as CoreOS did: clients
	// written for its operator read status.phase without checking that it is there.
	// +optional
	Phase ClusterPhase `json:"phase"`
	// Reason explains a Failed phase.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ControlPaused mirrors spec.paused once the operator has stopped acting.
	// +optional
	ControlPaused bool `json:"controlPaused,omitempty"`
	// Conditions of the cluster.
	// +optional
	Conditions []ClusterCondition `json:"conditions,omitempty"`
	// Size is the current number of members.
	// +optional
	Size int `json:"size"`
	// ServiceName is the client Service, <cluster>-client.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// ClientPort is the etcd client port of the Service, 2379.
	// +optional
	ClientPort int `json:"clientPort,omitempty"`
	// Members lists members by readiness.
	// +optional
	Members MembersStatus `json:"members"`
	// CurrentVersion is the etcd version every member runs; during an upgrade, the version
	// being upgraded from.
	// +optional
	CurrentVersion string `json:"currentVersion"`
	// TargetVersion is the version an upgrade is moving to; empty when none is in progress.
	// +optional
	TargetVersion string `json:"targetVersion"`
	// VersionSince is from which raft index every member ran the current minor version
	// (checked before a 3.6 → 3.7 step).
	// +optional
	VersionSince *VersionSince `json:"versionSince,omitempty"`
	// UpgradeBackup is the backup taken before the last minor upgrade step (or why none
	// was): the snapshot to roll back to.
	// +optional
	UpgradeBackup *UpgradeBackupStatus `json:"upgradeBackup,omitempty"`

	// Selector is the label selector of the cluster's member pods, in string form: the
	// scale subresource's selector, for `kubectl scale` and autoscalers.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ClusterID is etcd's cluster ID, in hex, once the cluster has formed.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// Bootstrapped records that the cluster has formed (etcd answered a member list) at
	// least once, so a later total outage is never mistaken for "not created yet".
	// +optional
	Bootstrapped bool `json:"bootstrapped,omitempty"`
	// BootstrapMembers are the initial members' names, recorded before their pods are
	// created so an interrupted bootstrap completes with the same initial cluster.
	// +optional
	BootstrapMembers []string `json:"bootstrapMembers,omitempty"`
	// PendingMember records a membership change the operator has started but not finished
	// (a learner added but not yet promoted), so a restarted operator resumes it.
	// +optional
	PendingMember *PendingMember `json:"pendingMember,omitempty"`
	// Recovery records a quorum-loss recovery in progress (opted into with the
	// etcd.database.coreos.com/allow-force-new-cluster annotation): a new one-member
	// cluster is seeded from the surviving member with the highest revision, the old
	// members are removed once it serves, and the cluster then regrows to spec.size.
	// +optional
	Recovery *RecoveryStatus `json:"recovery,omitempty"`
	// Maintenance records defragmentation runs and the NOSPACE remediation.
	// +optional
	Maintenance *MaintenanceStatus `json:"maintenance,omitempty"`
	// BackupRestore records a restore from backup after total loss (opted into with the
	// etcd.database.coreos.com/allow-restore-from-backup annotation): in progress, or
	// the last one finished.
	// +optional
	BackupRestore *BackupRestoreStatus `json:"backupRestore,omitempty"`
}

// RecoveryStatus is a quorum-loss recovery recorded before any of its steps, so a
// restarted operator finishes it with the same source, member and token.
type RecoveryStatus struct {
	// Source is the surviving voting member whose data seeds the new cluster.
	Source string `json:"source"`
	// SourceID is the source's etcd member ID in hex.
	SourceID string `json:"sourceID"`
	// Revision is the source's revision when the recovery started. The new cluster must
	// serve at least this revision before any old member is removed.
	Revision int64 `json:"revision"`
	// Member is the name of the new cluster's first member (and of its pod).
	Member string `json:"member"`
	// Token is the new cluster's --initial-cluster-token. It differs from the old one,
	// so no old member can ever join the new cluster.
	Token string `json:"token"`
	// StartedAt is when the recovery was decided.
	StartedAt metav1.Time `json:"startedAt"`
}

// PendingMember is a member added to etcd whose pod may not yet run.
type PendingMember struct {
	// Name of the member and its pod.
	Name string `json:"name"`
	// ID is etcd's member ID in hex.
	ID string `json:"id"`
	// AddedAt is when the member was added.
	AddedAt metav1.Time `json:"addedAt"`
}

// EtcdCluster is an etcd cluster run by the operator.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.selector
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=etcd
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`,description="Desired members"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,description="Whether the cluster serves with all members"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`,description="Running etcd version"
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.members.leader`,priority=1,description="Member etcd answered is the leader"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,priority=1
// +kubebuilder:printcolumn:name="Service Type",type=string,JSONPath=`.metadata.annotations.etcd\.database\.coreos\.com/client-service-type`,priority=1,description="Type of the client Service; empty is ClusterIP"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdCluster.
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
