package planner

import (
	"fmt"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The upgrade rule's snapshot gate (checked by planUpgrade after the storage wait): a minor step
// into etcd 3.7 or later waits until every voter has taken a raft snapshot past the log
// written before all members ran the previous minor.
//
// Why: etcd 3.7 cannot replay log entries written under 3.5 (it panics, "unmarshal
// should never fail", and crash-loops; reproduced on the bench with one member). A
// restarted member replays only the WAL entries after its newest raft snapshot, and
// etcd 3.6 writes one to disk whenever it has applied more than its --snapshot-count
// entries since the last (server.go, shouldSnapshotToDisk: appliedi − snapshot index >
// SnapshotCount, checked after every apply). etcd has no API to trigger one. So a member
// whose applied index has reached R + snapshot-count + 1, where R is the raft index by
// which every member ran the previous minor (status.versionSince, recorded by the
// controller), has a snapshot at R or later, and replays no older entry.
//
// R is 0 when the operator created the cluster on that minor: no entry is older. A
// cluster first seen by this operator on the minor (adopted, or created by an operator
// without the record) gets R = its raft index then, which is conservative. Writes advance
// the index; an idle cluster waits (the message says how far each member is).

// DefaultSnapshotCount is etcd 3.6's --snapshot-count when none is set.
const DefaultSnapshotCount uint64 = 10000

// firstGatedMinor is the first minor a step into is gated: 3.7.
var firstGatedMinor = Version{Major: 3, Minor: 7}

// VersionSince is the record behind the gate: from raft index RaftIndex on, every member
// ran Minor ("3.6").
type VersionSince struct {
	Minor     string
	RaftIndex uint64
}

// waitForSnapshotPast holds a gated minor step (see above) until every voter's applied
// index has passed the recorded index by its snapshot count.
func (v *view) waitForSnapshotPast(target Version, need []upgradeStep) (Action, bool) {
	if target.Major != firstGatedMinor.Major || target.Minor < firstGatedMinor.Minor {
		return Action{}, false
	}
	prev := fmt.Sprintf("%d.%d", target.Major, target.Minor-1)
	if !stepsFromMinorBefore(target, need) {
		return Action{}, false
	}
	since := v.o.VersionSince
	if since == nil || since.Minor != prev {
		return wait(v1beta2.ReasonUpgradeWaitsForSnapshot, fmt.Sprintf(
			"waiting to record the raft index by which every member runs %s with its storage at %s (status.versionSince), before %s", prev, prev, target), requeueShort), true
	}
	if since.RaftIndex == 0 {
		return Action{}, false
	}
	for _, m := range v.voters {
		count := DefaultSnapshotCount
		if p := v.podOf[m.ID]; p != nil && p.SnapshotCountUnread != "" {
			// Taking etcd's default for a count the pod sets some other way could open
			// the gate before the member has its snapshot.
			return wait(v1beta2.ReasonUpgradeWaitsForSnapshot, fmt.Sprintf(
				"%s waits until every member has taken a raft snapshot on %s past raft index %d, and the snapshot count of %s cannot be read: %s; set ETCD_SNAPSHOT_COUNT as a plain value in spec.pod.etcdEnv",
				target, prev, since.RaftIndex, m.Name, p.SnapshotCountUnread), requeueWait), true
		} else if p != nil && p.SnapshotCount > 0 {
			count = p.SnapshotCount
		}
		need := since.RaftIndex + count + 1
		if m.AppliedIndex < need {
			return wait(v1beta2.ReasonUpgradeWaitsForSnapshot, fmt.Sprintf(
				"%s waits until every member has taken a raft snapshot on %s past raft index %d (etcd %d.%d cannot replay older log entries): %s has applied %d of %d entries (its snapshot-count is %d); writes advance it",
				target, prev, since.RaftIndex, target.Major, target.Minor, m.Name, m.AppliedIndex, need, count), requeueWait), true
		}
	}
	return Action{}, false
}
