package planner

import "testing"

// The upgrade rule's snapshot gate: a step into 3.7 waits until every voter has a raft snapshot
// past the index by which all members ran 3.6.
func TestSnapshotGate(t *testing.T) {
	since := func(minor string, index uint64, applied ...uint64) func() Observed {
		return func() Observed {
			o := upgrading(3, 1)()
			o.VersionSince = nil
			if minor != "" {
				o.VersionSince = &VersionSince{Minor: minor, RaftIndex: index}
			}
			for i, a := range applied {
				o.Members[i].AppliedIndex = a
			}
			return o
		}
	}
	gated := "UpgradeWaitsForSnapshot"
	runCases(t, []tcase{
		{"no record yet: wait for it", size(3), since("", 0), want{kind: Wait, reason: gated, check: wantMessage("status.versionSince")}},
		{"a record of 3.5 is not one of 3.6", size(3), since("3.5", 0), want{kind: Wait, reason: gated}},
		{"created on 3.6: no older log, no wait", size(3), since("3.6", 0), want{kind: UpgradeMember, id: 2, version: v37}},
		{"a member one entry short of its snapshot past the record waits the step", size(3),
			since("3.6", 5000, 20000, 15000, 20000),
			want{kind: Wait, reason: gated, check: wantMessage(mname(2) + " has applied 15000 of 15001 entries (its snapshot-count is 10000)")}},
		{"every member past the record by its snapshot count: the step starts", size(3),
			since("3.6", 5000, 15001, 15001, 15001), want{kind: UpgradeMember, id: 2, version: v37}},
		{"a lower snapshot count on the pod counts", size(3), func() Observed {
			o := since("3.6", 5000, 5201, 5201, 5201)()
			for i := range o.Pods {
				o.Pods[i].SnapshotCount = 200
			}
			return o
		}, want{kind: UpgradeMember, id: 2}},
		{"a lower snapshot count, one entry short", size(3), func() Observed {
			o := since("3.6", 5000, 5201, 5201, 5200)()
			for i := range o.Pods {
				o.Pods[i].SnapshotCount = 200
			}
			return o
		}, want{kind: Wait, reason: gated, check: wantMessage(mname(3) + " has applied 5200 of 5201")}},
		{"a snapshot count the operator cannot read holds the step, naming the variable", size(3), func() Observed {
			o := since("3.6", 5000, 15001, 15001, 15001)()
			o.Pods[1].SnapshotCountUnread = "ETCD_SNAPSHOT_COUNT is set through valueFrom"
			return o
		}, want{kind: Wait, reason: gated, check: wantMessage("snapshot count of " + mname(2) + " cannot be read: ETCD_SNAPSHOT_COUNT is set through valueFrom")}},
		{"an unread snapshot count does not hold a cluster created on 3.6", size(3), func() Observed {
			o := since("3.6", 0)()
			o.Pods[1].SnapshotCountUnread = "ETCD_SNAPSHOT_COUNT is set through valueFrom"
			return o
		}, want{kind: UpgradeMember, id: 2, version: v37}},
		{"a step already taken is finished, not gated", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			o.VersionSince = &VersionSince{Minor: "3.6", RaftIndex: 5000}
			return o
		}, want{kind: UpgradeMember, id: 3}},
		{"a patch step is not gated", func() Desired { d := desired(3); d.Version = "3.6.17"; return d }, func() Observed {
			o := clusterOn(3, v36)
			o.LeaderID = 1
			return o
		}, want{kind: UpgradeMember, id: 2, version: "3.6.17"}},
		{"3.5 → 3.6 is not gated", func() Desired { d := desired(3); d.Version = v36; return d }, func() Observed {
			o := clusterOn(3, "3.5.36")
			o.LeaderID = 1
			return o
		}, want{kind: UpgradeMember, id: 2, version: v36}},
	})
}
