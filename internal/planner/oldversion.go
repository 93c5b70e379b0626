package planner

import (
	"fmt"
	"strings"
)

// OldVersionPath is the way forward for a cluster CoreOS etcd-operator left on an etcd
// older than MinSupportedVersion (CoreOS 0.9.4 ran 3.2 by default, and 3.3 or 3.4 when
// asked). The operator cannot run those releases, so it adopts such a cluster read-only
// (status only: no pod, no member, no membership change) and says here which minor steps
// remain and how to take them. etcd upgrades one minor at a time; each step needs every
// member on the previous minor. from is the oldest version any member runs (or the
// spec's, if none answered). ok is false when from is not older than MinSupportedVersion.
//
// The two ways: finish the upgrade under CoreOS etcd-operator (which can still restart
// its members), one minor at a time up to MinSupportedVersion's minor, after which this
// operator takes the cluster over in place; or, keeping the old cluster as it is, restore
// a snapshot it wrote into a new cluster on a version this operator runs (an EtcdRestore
// with the restore-cluster-spec annotation naming the version), then move clients over.
func OldVersionPath(from Version) (steps []string, message string, ok bool) {
	min, _ := ParseVersion(MinSupportedVersion)
	if from.Major > min.Major || from.Major == min.Major && from.Minor >= min.Minor {
		return nil, "", false
	}
	if from.Major < min.Major {
		return nil, fmt.Sprintf(
			"etcd %s is older than the oldest version this operator runs (%s) by a major version; it is adopted read-only (status only: no pod, member or membership change). etcd has no rolling path from %d.x: restore a snapshot it wrote into a new cluster on %d.%d or later (an EtcdRestore whose annotation etcd.database.coreos.com/restore-cluster-spec names the version)",
			from, MinSupportedVersion, from.Major, min.Major, min.Minor), true
	}
	path := []string{fmt.Sprintf("%d.%d", from.Major, from.Minor)}
	for m := from.Minor + 1; m <= min.Minor; m++ {
		steps = append(steps, fmt.Sprintf("%d.%d", from.Major, m))
		path = append(path, steps[len(steps)-1])
	}
	message = fmt.Sprintf(
		"etcd %s is older than the oldest version this operator runs (%s); the cluster is adopted read-only (status only: no pod, member or membership change). Minor steps left: %s (etcd upgrades one minor at a time). "+
			"Either (1) upgrade it under CoreOS etcd-operator: first keep this operator off the cluster (give it another scope: the etcd.database.coreos.com/scope annotation with --scope-annotation; not spec.paused, which pauses CoreOS's operator too), then, one minor at a time, set spec.version to the latest %s patch, wait until every member runs it, and so on up to %s; once every member runs it, let this operator act again and it takes the cluster over in place (it stays read-only while any member still runs an older version); "+
			"or (2) take a snapshot of it (CoreOS's EtcdBackup, or etcdctl snapshot save) and restore it into a new cluster with an EtcdRestore whose annotation etcd.database.coreos.com/restore-cluster-spec names version %d.%d or later, then move the clients",
		from, MinSupportedVersion, strings.Join(path, " → "), strings.Join(steps, ", then "), steps[len(steps)-1], min.Major, min.Minor)
	return steps, message, true
}
