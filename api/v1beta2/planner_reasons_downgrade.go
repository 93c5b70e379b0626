package v1beta2

// Reasons for a minor downgrade through etcd's downgrade API (internal/planner/downgrade.go)
// and for a cluster adopted read-only because it runs an etcd older than the operator runs
// (internal/planner/oldversion.go). Like every reason, their values never change.
const (
	// ReasonDowngradeRefused: spec.version is below a member's minor version and etcd
	// cannot downgrade there (more than one minor down, a major change, or a minor whose
	// etcd has no downgrade procedure); nothing moves.
	ReasonDowngradeRefused = "DowngradeRefused"
	// ReasonDowngrading: a minor downgrade is under way: etcd's downgrade is enabled, the
	// storage migrated, the members restarted one at a time on the older version.
	ReasonDowngrading = "Downgrading"
	// ReasonDowngradeCancelled: spec.version went back up while etcd's downgrade was
	// enabled; the operator cancels it in etcd and the members return to spec.version.
	ReasonDowngradeCancelled = "DowngradeCancelled"
	// ReasonUpgradePathRequired: a cluster CoreOS etcd-operator created runs an etcd older
	// than the oldest this operator runs; it is adopted read-only (status only, nothing
	// changed) and the message says which minor steps remain and how to take them.
	ReasonUpgradePathRequired = "UpgradePathRequired"
)
