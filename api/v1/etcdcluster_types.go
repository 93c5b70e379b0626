package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// EtcdClusterSpec is the desired state of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.static) || !has(self.tls.static.member) || ((has(self.tls.static.member.serverSecret) && size(self.tls.static.member.serverSecret) > 0) == (has(self.tls.static.operatorSecret) && size(self.tls.static.operatorSecret) > 0))",message="tls.static.operatorSecret must be set if and only if tls.static.member.serverSecret is set",fieldPath=".tls.static.operatorSecret"
// +kubebuilder:validation:XValidation:rule="!has(self.etcd) || !has(self.pod) || !has(self.pod.env) || !self.pod.env.exists(e, (has(self.etcd.quotaBackendBytes) && e.name == 'ETCD_QUOTA_BACKEND_BYTES') || (has(self.etcd.autoCompactionMode) && e.name == 'ETCD_AUTO_COMPACTION_MODE') || (has(self.etcd.autoCompactionRetention) && e.name == 'ETCD_AUTO_COMPACTION_RETENTION'))",message="a setting of spec.etcd may not be set through spec.pod.env as well",fieldPath=".etcd"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.auth) || has(self.auth)",message="auth may not be removed: etcd authentication stays on once enabled",fieldPath=".auth"
// +kubebuilder:validation:XValidation:rule="self.size > 0 || (has(self.pod) && has(self.pod.persistentVolumeClaimSpec))",message="size 0 (hibernation) needs pod.persistentVolumeClaimSpec: members keep their data only on claims, and without them stopping the pods would delete it",fieldPath=".size"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.tls) || !(has(oldSelf.tls.static) || (has(oldSelf.tls.issuer) && has(oldSelf.tls.issuer.builtin))) || !has(self.tls) || !has(self.tls.issuer) || !has(self.tls.issuer.issuerRef)",message="tls.issuer.issuerRef may not replace tls.static or tls.issuer.builtin on an existing cluster: its members would have to trust cert-manager's CA before any of them presents it, which the operator cannot do from Secrets it does not hold (restore a backup into a new cluster with tls.issuer.issuerRef instead)",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="(self.size > 0 && oldSelf.size > 0) || (has(self.tls) == has(oldSelf.tls) && (!has(self.tls) || self.tls == oldSelf.tls) && (has(self.pod) && has(self.pod.clusterDomain)) == (has(oldSelf.pod) && has(oldSelf.pod.clusterDomain)) && (!has(self.pod) || !has(self.pod.clusterDomain) || self.pod.clusterDomain == oldSelf.pod.clusterDomain))",message="tls and pod.clusterDomain may not change while size is 0, nor in the update that sets size to 0 or raises it from 0: hibernated members all come back at once on the spec, so change them while the cluster runs, where the change is rolled out (or held) one member at a time",fieldPath=".size"
type EtcdClusterSpec struct {
	// Size is the number of voting members. Odd sizes from 1 to 7 are recommended: an even
	// size tolerates no more failures than the odd size below it. Sizes above 7 are
	// accepted with a warning; above 99 they are refused, as in v1beta2.
	// 0 hibernates a cluster whose members keep their data on claims
	// (pod.persistentVolumeClaimSpec; refused without): every member pod is stopped, the
	// claims and the membership are kept, and status.phase reads Hibernated. Raising the
	// size brings the same members back on their data first, then scales to the new size.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=99
	Size int `json:"size"`

	// Repository is the etcd image repository; the image used is <repository>:v<version>.
	// Defaults to the repository of CoreOS's etcd images, as in v1beta2.
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

	// TLS configures TLS for peer and client traffic. It is v1beta2's capitalised TLS.
	// +optional
	TLS *TLSPolicy `json:"tls,omitempty"`

	// Etcd holds etcd settings the operator passes to every member. v1beta2 stores them as
	// annotations (etcd.database.coreos.com/quota-backend-bytes, auto-compaction-mode,
	// auto-compaction-retention). A change reaches only members created after it: running
	// members keep their settings (the SpecApplied condition lists them) until they are
	// replaced.
	// +optional
	Etcd *EtcdSettings `json:"etcd,omitempty"`

	// Maintenance schedules the defragmentation of the members' databases. v1beta2
	// stores it as annotations (etcd.database.coreos.com/defragmentation-schedule,
	// defragmentation-time-zone, defragmentation-threshold-percent).
	// +optional
	Maintenance *Maintenance `json:"maintenance,omitempty"`

	// ClientService configures the client Service <cluster>-client: its type (ClusterIP,
	// NodePort, LoadBalancer), annotations, labels and traffic settings.
	// +optional
	ClientService *ClientService `json:"clientService,omitempty"`

	// Auth turns on etcd's user authentication (auth_types.go).
	// +optional
	Auth *Auth `json:"auth,omitempty"`
}

// EtcdSettings are etcd's space settings: the quota at which it raises NOSPACE and stops
// taking writes, and the automatic compaction that keeps the history from filling it.
// Each one set here may not be set through pod.env as well.
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionRetention) || self.autoCompactionRetention.matches('^[0-9]{1,18}$') || ((!has(self.autoCompactionMode) || self.autoCompactionMode == 'periodic') && self.autoCompactionRetention.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$'))",message="autoCompactionRetention must be a whole number (of hours for periodic, of revisions for revision) or, for periodic, a duration such as 30m or 1h",fieldPath=".autoCompactionRetention"
type EtcdSettings struct {
	// QuotaBackendBytes is etcd's --quota-backend-bytes: the database size, in bytes, at
	// which a member raises the NOSPACE alarm and the cluster takes no more writes until
	// space is freed. Unset: etcd's default, 2 GiB. etcd suggests at most 8 GiB.
	// +optional
	// +kubebuilder:validation:Minimum=1048576
	// +kubebuilder:validation:Maximum=68719476736
	QuotaBackendBytes int64 `json:"quotaBackendBytes,omitempty"`

	// AutoCompactionMode is etcd's --auto-compaction-mode: periodic keeps the history of
	// the retention period, revision the last retention revisions. Unset: periodic.
	// +optional
	// +kubebuilder:validation:Enum=periodic;revision
	AutoCompactionMode AutoCompactionMode `json:"autoCompactionMode,omitempty"`

	// AutoCompactionRetention is etcd's --auto-compaction-retention: for periodic a
	// duration ("30m", "1h") or a whole number of hours ("1"), for revision a whole number
	// of revisions ("10000"). Unset or "0": no automatic compaction.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`
}

// AutoCompactionMode is how etcd's automatic compaction counts what it keeps.
type AutoCompactionMode string

// Auto-compaction modes.
const (
	AutoCompactionPeriodic AutoCompactionMode = "periodic"
	AutoCompactionRevision AutoCompactionMode = "revision"
)

// PodPolicy customises the member pods.
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
	// pod anti-affinity on topology key kubernetes.io/hostname). Affinity can express the
	// same and more.
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

	// Env is extra environment for the etcd container, e.g. ETCD_SNAPSHOT_COUNT (the quota
	// and auto-compaction have their own fields in spec.etcd). It is v1beta2's etcdEnv.
	// Variables etcd reads as flags (ETCD_*) are an allowlist: only settings that tune how
	// a member runs (quota, compaction, snapshot count, heartbeat and election timeouts,
	// request limits, gRPC keepalive, log level and format, consistency checks, feature
	// gates, ...) and cannot change its identity, data location, log outputs, TLS policy
	// or exposure (pprof, extra listeners). Other names are the image's own, except those
	// the operator sets and GODEBUG, the proxy variables and SSL_CERT_FILE/DIR.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:XValidation:rule="self.name.startsWith('ETCD_') ? self.name in ['ETCD_QUOTA_BACKEND_BYTES', 'ETCD_AUTO_COMPACTION_MODE', 'ETCD_AUTO_COMPACTION_RETENTION', 'ETCD_BACKEND_BATCH_LIMIT', 'ETCD_BACKEND_BATCH_INTERVAL', 'ETCD_BACKEND_BBOLT_FREELIST_TYPE', 'ETCD_SNAPSHOT_COUNT', 'ETCD_MAX_SNAPSHOTS', 'ETCD_MAX_WALS', 'ETCD_EXPERIMENTAL_COMPACTION_BATCH_LIMIT', 'ETCD_COMPACTION_BATCH_LIMIT', 'ETCD_EXPERIMENTAL_COMPACTION_SLEEP_INTERVAL', 'ETCD_COMPACTION_SLEEP_INTERVAL', 'ETCD_EXPERIMENTAL_BOOTSTRAP_DEFRAG_THRESHOLD_MEGABYTES', 'ETCD_BOOTSTRAP_DEFRAG_THRESHOLD_MEGABYTES', 'ETCD_EXPERIMENTAL_SNAPSHOT_CATCHUP_ENTRIES', 'ETCD_SNAPSHOT_CATCHUP_ENTRIES', 'ETCD_HEARTBEAT_INTERVAL', 'ETCD_ELECTION_TIMEOUT', 'ETCD_PRE_VOTE', 'ETCD_EXPERIMENTAL_MAX_LEARNERS', 'ETCD_MAX_LEARNERS', 'ETCD_MAX_REQUEST_BYTES', 'ETCD_MAX_TXN_OPS', 'ETCD_MAX_CONCURRENT_STREAMS', 'ETCD_GRPC_KEEPALIVE_MIN_TIME', 'ETCD_GRPC_KEEPALIVE_INTERVAL', 'ETCD_GRPC_KEEPALIVE_TIMEOUT', 'ETCD_LOG_LEVEL', 'ETCD_LOG_FORMAT', 'ETCD_METRICS', 'ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK', 'ETCD_EXPERIMENTAL_CORRUPT_CHECK_TIME', 'ETCD_CORRUPT_CHECK_TIME', 'ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_ENABLED', 'ETCD_EXPERIMENTAL_COMPACT_HASH_CHECK_TIME', 'ETCD_COMPACT_HASH_CHECK_TIME', 'ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL', 'ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL', 'ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION', 'ETCD_WARNING_APPLY_DURATION', 'ETCD_EXPERIMENTAL_WARNING_UNARY_REQUEST_DURATION', 'ETCD_WARNING_UNARY_REQUEST_DURATION', 'ETCD_EXPERIMENTAL_ENABLE_LEASE_CHECKPOINT', 'ETCD_EXPERIMENTAL_ENABLE_LEASE_CHECKPOINT_PERSIST', 'ETCD_EXPERIMENTAL_MEMORY_MLOCK', 'ETCD_MEMORY_MLOCK', 'ETCD_EXPERIMENTAL_TXN_MODE_WRITE_WITH_SHARED_BUFFER', 'ETCD_EXPERIMENTAL_STOP_GRPC_SERVICE_ON_DEFRAG', 'ETCD_EXPERIMENTAL_DOWNGRADE_CHECK_TIME', 'ETCD_DOWNGRADE_CHECK_TIME', 'ETCD_FEATURE_GATES', 'ETCD_AUTH_TOKEN', 'ETCD_AUTH_TOKEN_TTL', 'ETCD_BCRYPT_COST'] : !(self.name in ['POD_IP', 'POD_NAME', 'GODEBUG', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR'])",messageExpression="self.name + (self.name.startsWith('ETCD_') ? ' may not be set: only etcd settings that cannot change the member identity, data location, log outputs or TLS policy are allowed (e.g. ETCD_QUOTA_BACKEND_BYTES, ETCD_SNAPSHOT_COUNT, ETCD_HEARTBEAT_INTERVAL, ETCD_LOG_LEVEL)' : ' may not be set: the operator sets it, or it changes how the member trusts or routes its connections')"
	Env []corev1.EnvVar `json:"env,omitempty"`

	// PersistentVolumeClaimSpec, when set, gives each member a PVC (named like its pod)
	// for its data instead of an emptyDir.
	// +optional
	PersistentVolumeClaimSpec *corev1.PersistentVolumeClaimSpec `json:"persistentVolumeClaimSpec,omitempty"`

	// Annotations are added to every member pod. The key "etcd.version" is reserved.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!('etcd.version' in self)",message="annotation key 'etcd.version' is reserved"
	Annotations map[string]string `json:"annotations,omitempty"`

	// SecurityContext of the member pods. Fields left unset get what the Pod Security
	// "restricted" profile asks for: runAsNonRoot, runAsUser, runAsGroup and fsGroup 65532
	// (runAsGroup only when runAsUser is unset; runAsNonRoot not when runAsUser is 0), and
	// seccompProfile RuntimeDefault. Containers never escalate privileges and drop all
	// capabilities.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// DNSTimeout bounds how long a new member waits for its own DNS record, e.g. 2m;
	// unset or 0s waits forever. The operator never removes a member because its record is
	// late. At most 24h: a longer wait is indistinguishable from waiting forever. It is
	// v1beta2's DNSTimeoutInSecond.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="dnsTimeout must not be negative"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('24h')",message="dnsTimeout must be at most 24h (0s waits forever)"
	DNSTimeout *metav1.Duration `json:"dnsTimeout,omitempty"`

	// ClusterDomain is the cluster's DNS domain, e.g. cluster.local. Empty means members
	// are addressed as <pod>.<cluster>.<namespace>.svc, which resolves in any domain. It is
	// v1beta2's capitalised ClusterDomain.
	// It must be a DNS name (RFC 1123: lower-case labels of letters, digits and '-', joined
	// by dots; a dot at either end is allowed): the operator dials members under it, so it may
	// not carry a user, port, path or fragment ('@', ':', '/', '#') that would point those
	// connections elsewhere.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^\.?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?$`
	ClusterDomain string `json:"clusterDomain,omitempty"`

	// ImagePullSecrets name Secrets of the cluster's namespace holding credentials for
	// the registry of the etcd image (a private mirror, say). The backup, restore and
	// verification pods get them too. Changing them replaces the members one at a time.
	// v1beta2 stores them as the annotation etcd.database.coreos.com/pod-image-pull-secrets
	// (JSON).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(s, has(s.name) && size(s.name) > 0)",message="imagePullSecrets: every entry must name a Secret"
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// PriorityClassName is the member pods' PriorityClass, so the scheduler preempts
	// less important pods rather than leave a member pending. The backup, restore and
	// verification pods get it too. Changing it replaces the members one at a time.
	// v1beta2: annotation etcd.database.coreos.com/pod-priority-class-name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// TopologySpreadConstraints spread the members over zones or nodes, e.g. maxSkew 1
	// over topology.kubernetes.io/zone. A constraint without a labelSelector counts this
	// cluster's members (label etcd_cluster). Changing them replaces the members one at a
	// time. v1beta2: annotation etcd.database.coreos.com/pod-topology-spread-constraints
	// (JSON).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.maxSkew >= 1)",message="topologySpreadConstraints: maxSkew must be at least 1"
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.topologyKey) > 0)",message="topologySpreadConstraints: topologyKey must be set"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.whenUnsatisfiable in ['DoNotSchedule', 'ScheduleAnyway'])",message="topologySpreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// ServiceAccountName is the member pods' ServiceAccount (for a workload identity,
	// say). Its token is never mounted: etcd does not talk to the Kubernetes API. Unset:
	// the namespace's default account, likewise without a token. Changing it replaces the
	// members one at a time. v1beta2: annotation
	// etcd.database.coreos.com/pod-service-account-name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// DNSConfig adds nameservers, search domains and resolver options to the member
	// pods' DNS settings (their DNS policy stays ClusterFirst, so members still find each
	// other through the cluster's DNS). Changing it replaces the members one at a time.
	// v1beta2: annotation etcd.database.coreos.com/pod-dns-config (JSON).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.nameservers) || size(self.nameservers) <= 3",message="dnsConfig.nameservers: at most 3"
	// +kubebuilder:validation:XValidation:rule="!has(self.searches) || size(self.searches) <= 32",message="dnsConfig.searches: at most 32"
	DNSConfig *corev1.PodDNSConfig `json:"dnsConfig,omitempty"`

	// HostAliases is refused: a member's peers must resolve to the members themselves,
	// and /etc/hosts entries could point their names elsewhere.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",message="hostAliases may not be set: a member's peers must resolve to the members themselves"
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`

	// Volumes is refused: a member pod's volumes are its data directory and its
	// certificates, which the operator alone mounts.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",message="volumes may not be set: only the operator mounts volumes into member pods (data directory safety)"
	Volumes []v1beta2.RefusedVolume `json:"volumes,omitempty"`

	// VolumeMounts is refused, as volumes is: nothing else is mounted beside or over the
	// data directory.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",message="volumeMounts may not be set: only the operator mounts volumes into member pods (data directory safety)"
	VolumeMounts []v1beta2.RefusedVolume `json:"volumeMounts,omitempty"`
}

// ClientService configures the client Service <cluster>-client, the address etcd
// clients use. The peer Service <cluster> stays headless and internal whatever is set
// here. v1beta2 stores these as annotations etcd.database.coreos.com/client-service-*
// (type, annotations, labels, load-balancer-source-ranges, external-traffic-policy,
// ip-family-policy, ip-families; lists and maps as JSON). A change updates the Service
// in place.
// +kubebuilder:validation:XValidation:rule="!has(self.externalTrafficPolicy) || (has(self.type) && self.type != 'ClusterIP')",message="externalTrafficPolicy is only for type NodePort or LoadBalancer",fieldPath=".externalTrafficPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || size(self.loadBalancerSourceRanges) == 0 || (has(self.type) && self.type == 'LoadBalancer')",message="loadBalancerSourceRanges is only for type LoadBalancer",fieldPath=".loadBalancerSourceRanges"
// +kubebuilder:validation:XValidation:rule="!has(self.ipFamilies) || size(self.ipFamilies) < 2 || !has(self.ipFamilyPolicy) || self.ipFamilyPolicy != 'SingleStack'",message="two ipFamilies need a dual-stack ipFamilyPolicy",fieldPath=".ipFamilies"
type ClientService struct {
	// Type of the client Service: ClusterIP (the default), NodePort (reachable on every
	// node's IP at an allocated port) or LoadBalancer (an external load balancer, where
	// the platform provides one).
	// +optional
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type corev1.ServiceType `json:"type,omitempty"`

	// Annotations added to the client Service, e.g. a cloud load balancer's settings.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels added to the client Service. Keys "app" and those starting with "etcd_" are
	// the operator's.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'app' && !k.startsWith('etcd_'))",message="label keys 'app' and 'etcd_*' are reserved"
	Labels map[string]string `json:"labels,omitempty"`

	// LoadBalancerSourceRanges are the CIDRs allowed to reach a LoadBalancer Service, where
	// the platform supports it. Type LoadBalancer only.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(r, isCIDR(r))",message="loadBalancerSourceRanges: every entry must be a CIDR such as 10.0.0.0/8"
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`

	// ExternalTrafficPolicy is Cluster (any node forwards to any member) or Local (a node
	// forwards only to members on it, keeping the client's address). NodePort and
	// LoadBalancer only.
	// +optional
	// +kubebuilder:validation:Enum=Cluster;Local
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`

	// IPFamilyPolicy is SingleStack, PreferDualStack or RequireDualStack. Unset: the
	// cluster's default (SingleStack).
	// +optional
	// +kubebuilder:validation:Enum=SingleStack;PreferDualStack;RequireDualStack
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`

	// IPFamilies are the Service's IP families in order, IPv4 and/or IPv6. The first
	// cannot change once the Service exists.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=IPv4;IPv6
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`
}

// TLSPolicy configures TLS for the cluster.
// +kubebuilder:validation:XValidation:rule="!(has(self.static) && has(self.issuer))",message="tls.static and tls.issuer are mutually exclusive"
type TLSPolicy struct {
	// Static uses certificates the user put in Secrets.
	// +optional
	Static *StaticTLS `json:"static,omitempty"`
	// Issuer has certificates issued and renewed for the cluster (tls_issuer_types.go).
	// +optional
	Issuer *TLSIssuer `json:"issuer,omitempty"`
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

// Condition types of an EtcdCluster, the same as v1beta2's.
const (
	ClusterConditionAvailable  = "Available"
	ClusterConditionRecovering = "Recovering"
	ClusterConditionScaling    = "Scaling"
	ClusterConditionUpgrading  = "Upgrading"
)

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
	// Phase is "", Creating, Running, Failed, or Hibernated (spec.size 0, no member pod running).
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`
	// Reason explains a Failed phase.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ControlPaused mirrors spec.paused once the operator has stopped acting.
	// +optional
	ControlPaused bool `json:"controlPaused,omitempty"`
	// Conditions of the cluster: Available, Recovering, Scaling, Upgrading, and
	// PodsHealthy (why member pods cannot run), SpecApplied (spec changes that only new
	// members get), Reconciled (the operator's last observation or step failed), and
	// SpaceAvailable and DataConsistent (etcd's NOSPACE and CORRUPT alarms).
	// v1beta2's lastUpdateTime has no place here; it is kept in the conversion annotation.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
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
	UpgradeBackup *v1beta2.UpgradeBackupStatus `json:"upgradeBackup,omitempty"`
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
	// etcd.database.coreos.com/allow-force-new-cluster annotation).
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
	// Token is the new cluster's --initial-cluster-token, different from the old one so no
	// old member can ever join the new cluster.
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
// +kubebuilder:resource:shortName=etcd
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`,description="Desired members"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,description="Whether the cluster serves with all members"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`,description="Running etcd version"
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.members.leader`,priority=1,description="Member etcd answered is the leader"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,priority=1
// +kubebuilder:printcolumn:name="Service Type",type=string,JSONPath=`.spec.clientService.type`,priority=1,description="Type of the client Service; empty is ClusterIP"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired cluster.
	Spec EtcdClusterSpec `json:"spec"`
	// Status is the cluster as the operator last observed it.
	// +optional
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
