package v1beta2

// etcd settings CoreOS's API has no field for. v1's spec.etcd is stored as these
// annotations on the EtcdCluster; the member chart passes them to etcd. A change rolls
// out to the members one at a time through new pods (the SpecApplied condition says how
// far).
const (
	// QuotaBackendBytesAnnotation is etcd's --quota-backend-bytes: the database size at
	// which a member raises the NOSPACE alarm and the cluster stops taking writes. A
	// decimal number of bytes, from MinQuotaBackendBytes to MaxQuotaBackendBytes; absent:
	// etcd's default, DefaultQuotaBackendBytes.
	QuotaBackendBytesAnnotation = "etcd.database.coreos.com/quota-backend-bytes"
	// AutoCompactionModeAnnotation is etcd's --auto-compaction-mode: "periodic" (keep
	// the history of the retention period) or "revision" (keep the last retention
	// revisions). Absent: etcd's default, periodic.
	AutoCompactionModeAnnotation = "etcd.database.coreos.com/auto-compaction-mode"
	// AutoCompactionRetentionAnnotation is etcd's --auto-compaction-retention: for
	// periodic, a duration ("30m", "1h") or a whole number of hours ("1"); for revision,
	// a whole number of revisions. "0" or absent: no automatic compaction.
	AutoCompactionRetentionAnnotation = "etcd.database.coreos.com/auto-compaction-retention"
)

// Bounds and defaults of the quota.
const (
	// DefaultQuotaBackendBytes is etcd's own default quota, 2 GiB.
	DefaultQuotaBackendBytes int64 = 2 << 30
	// MinQuotaBackendBytes: below 1 MiB a fresh member's database already fills it.
	MinQuotaBackendBytes int64 = 1 << 20
	// MaxQuotaBackendBytes: etcd suggests at most 8 GiB; up to 64 GiB is accepted for
	// clusters that measured what they need.
	MaxQuotaBackendBytes int64 = 64 << 30
)

// Auto-compaction modes.
const (
	AutoCompactionPeriodic = "periodic"
	AutoCompactionRevision = "revision"
)
