package planner

import (
	"testing"
	"time"
)

// The upgrade rule: a rolling upgrade within the allowed skew, followers first, the leader last.
func TestPlanUpgrade(t *testing.T) {
	to := func(v string) func() Desired { return func() Desired { d := desired(3); d.Version = v; return d } }
	runCases(t, []tcase{
		{"upgrade starts with a follower", size(3), upgrading(3, 1), want{kind: UpgradeMember, id: 2, name: mname(2), version: v37}},
		{"upgrade continues with the next follower", size(3), upgrading(3, 1, 2), want{kind: UpgradeMember, id: 3}},
		{"leader last: move leadership to an upgraded member", size(3), func() Observed {
			o := upgrading(3, 1, 2, 3)()
			mem(&o, 3).RaftIndex = 10002
			return o
		}, want{kind: MoveLeader, from: 1, to: 3}},
		{"old leader upgraded after the move", size(3), upgrading(3, 2, 2, 3), want{kind: UpgradeMember, id: 1}},
		{"upgrade waits for the restarted member to run the new version", size(3), func() Observed {
			o := upgrading(3, 1)()
			pod(&o, mname(2)).Version = v37 // image changed, process not restarted yet
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress"}},
		{"a patch changed while a member restarts on the previous one: wait for it first", to("3.7.5"), func() Observed {
			o := cluster(3)
			o.LeaderID = 3
			pod(&o, mname(2)).Version = "3.7.4" // patched for 3.7.4, still runs 3.7.3
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress", check: wantMessage(mname(2) + " to run 3.7.4")}},
		{"upgrade waits while the restarted member is down", size(3), func() Observed {
			o := upgrading(3, 1)()
			pod(&o, mname(2)).Version = v37
			unreachable(&o, 2, t0.Add(-time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"upgrade waits for a restarted member to rejoin the leader", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			mem(&o, 2).LeaderUnknown = true // answers Status, has not heard from the leader yet
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress", check: wantMessage(mname(2))}},
		{"upgrade waits for a restarted member's pod to be Ready", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			pod(&o, mname(2)).Ready = false // serving, readiness probe not passed yet
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress", check: wantMessage(mname(2))}},
		{"upgrade of a 1-member cluster restarts it in place", size(1), upgrading(1, 1), want{kind: UpgradeMember, id: 1}},
		{"a minor step below the minimum patch is refused before it starts", to(v36), func() Observed {
			o := clusterOn(3, "3.5.28")
			return o
		}, want{kind: RefuseUpgrade, check: wantMessage("3.5.32 or later")}},
		{"a minor step an older operator began below the minimum patch is finished", to(v36), func() Observed {
			o := clusterOn(3, v36)
			o.LeaderID = 1
			mem(&o, 3).Version, pod(&o, mname(3)).Version = "3.5.28", "3.5.28" // members 1, 2 already on 3.6
			return o
		}, want{kind: UpgradeMember, id: 3, version: v36}},
		// A minor step starts only once etcd has finished the previous one in storage.
		{"minor step waits while a database is still at the minor before", size(3), func() Observed {
			o := upgrading(3, 1)()
			for i := range o.Members {
				o.Members[i].StorageVersion = "3.6.0"
			}
			mem(&o, 3).StorageVersion = "3.5.0" // every member on 3.6, its database not yet raised
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress", check: wantMessage(mname(3) + "'s storage is still at 3.5")}},
		{"minor step goes once every database is at the minor before", size(3), func() Observed {
			o := upgrading(3, 1)()
			for i := range o.Members {
				o.Members[i].StorageVersion = "3.6.0"
			}
			return o
		}, want{kind: UpgradeMember, id: 2}},
		{"mid-step, upgraded members' databases may trail", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			for i := range o.Members {
				o.Members[i].StorageVersion = "3.6.0" // member 2 runs 3.7, its storage stays 3.6 until all do
			}
			return o
		}, want{kind: UpgradeMember, id: 3}},
		{"patch step is not held by storage", func() Desired { d := desired(3); d.Version = "3.6.17"; return d }, func() Observed {
			o := upgrading(3, 1)()
			for i := range o.Members {
				o.Members[i].StorageVersion = "3.5.0"
			}
			return o
		}, want{kind: UpgradeMember, id: 2, version: "3.6.17"}},
		{"upgrade done", size(3), upgrading(3, 1, 1, 2, 3), want{kind: Done}},
		{"v-prefixed desired version equals running", func() Desired { d := desired(3); d.Version = "v3.7.3"; return d },
			func() Observed { return cluster(3) }, want{kind: Done}},
		{"patch upgrade allowed", to("3.7.4"), func() Observed { return cluster(3) }, want{kind: UpgradeMember, id: 2, version: "3.7.4"}},
		{"patch downgrade allowed", to("3.7.2"), func() Observed { return cluster(3) }, want{kind: UpgradeMember, id: 2, version: "3.7.2"}},
		{"a minor downgrade two minors down is refused", to("3.5.36"), func() Observed { return cluster(3) }, want{kind: RefuseUpgrade, reason: "DowngradeRefused",
			check: wantMessage("skips a minor")}},
		{"minor skip refused", to(v37), func() Observed {
			o := clusterOn(3, "3.5.21")
			return o
		}, want{kind: RefuseUpgrade, check: wantMessage("skips a minor")}},
		{"major change refused", to("4.0.0"), func() Observed { return cluster(3) }, want{kind: RefuseUpgrade, check: wantMessage("major")}},
		{"half-upgraded cluster cannot jump further", to("3.8.0"), upgrading(3, 1, 2), want{kind: RefuseUpgrade, check: wantMessage(mname(1))}},
		// etcd raises the cluster version only once every member runs the new minor: a
		// half-done step goes back without its downgrade API (downgrade.go).
		{"half-upgraded cluster rolls back a minor", to(v36), upgrading(3, 1, 2), want{kind: UpgradeMember, id: 2, version: v36, reason: "Downgrading"}},
		{"invalid version refused", to("three"), func() Observed { return cluster(3) }, want{kind: RefuseUpgrade, reason: "InvalidVersion"}},
		{"unknown running version: wait", size(3), func() Observed {
			o := cluster(3)
			mem(&o, 2).Version, pod(&o, mname(2)).Version = "", ""
			return o
		}, want{kind: Wait, reason: "VersionUnknown"}},
		{"pod version used when status has none", size(3), func() Observed {
			o := upgrading(3, 1)()
			mem(&o, 2).Version = ""
			return o
		}, want{kind: UpgradeMember, id: 2}},
		{"scale-up before upgrade, new member on the desired version", func() Desired { return desired(5) }, upgrading(3, 1),
			want{kind: AddLearner, version: v37}},
		{"scale-up with a refused upgrade uses the running version", func() Desired { d := desired(5); d.Version = "3.9.0"; return d },
			upgrading(3, 1), want{kind: AddLearner, version: v36}},
		{"pod for learner with a refused upgrade uses highest running version", func() Desired { d := desired(5); d.Version = "3.8.0"; return d },
			func() Observed {
				o := upgrading(3, 1, 2)()
				withLearner(&o, 99, "c-new", false, false, false, 0)
				mem(&o, 99).Version = ""
				return o
			}, want{kind: CreatePod, version: v37}},
		{"replacement during an upgrade joins on the new version", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			dropMember(&o, 3)
			dropPod(&o, mname(3))
			return o
		}, want{kind: AddLearner, version: v37}},
		{"refused upgrade does not block repairs", to("3.9.0"), func() Observed {
			o := cluster(3)
			crashloop(&o, 2, t0.Add(-time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 2}},
	})
}
