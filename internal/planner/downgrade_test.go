package planner

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The upgrade rule, downgrades (downgrade.go): one minor down through etcd's downgrade API.
func TestPlanDowngrade(t *testing.T) {
	const v35 = "3.5.36"
	to := func(v string) func() Desired { return func() Desired { d := desired(3); d.Version = v; return d } }
	// on36 is a healthy 3-member cluster on 3.6 led by member 1; the members in down run
	// (and their pods name) v35; storage is each 3.6 member's storage version.
	on36 := func(storage string, dg *Downgrade, down ...uint64) func() Observed {
		return func() Observed {
			o := cluster(3)
			o.Downgrade = dg
			isDown := map[uint64]bool{}
			for _, id := range down {
				isDown[id] = true
			}
			for i := range o.Members {
				if isDown[o.Members[i].ID] {
					o.Members[i].Version, o.Pods[i].Version = v35, v35 // etcd 3.5 reports no storage version
					continue
				}
				o.Members[i].Version, o.Pods[i].Version, o.Members[i].StorageVersion = v36, v36, storage
			}
			return o
		}
	}
	enabled := &Downgrade{Target: "3.5.0"}
	runCases(t, []tcase{
		{"3.6 → 3.5 starts by enabling etcd's downgrade", to(v35), on36("3.6.0", nil),
			want{kind: EnableDowngrade, reason: "Downgrading", version: "3.5", check: func(t *testing.T, a Action) {
				if a.StepBackup == nil || a.StepBackup.Skipped == "" {
					t.Errorf("no backup target: the step should say none was taken, got %+v", a.StepBackup)
				}
			}}},
		{"enabled: waits until etcd has migrated every member's storage", to(v35), on36("3.6.0", enabled),
			want{kind: Wait, reason: "Downgrading", check: wantMessage("migrate " + mname(1) + "'s storage from 3.6 to 3.5")}},
		{"storage migrated: a follower restarts first on 3.5", to(v35), on36("3.5.0", enabled),
			want{kind: UpgradeMember, id: 2, version: v35, reason: "Downgrading"}},
		{"waits for the restarted member to run 3.5", to(v35), func() Observed {
			o := on36("3.5.0", enabled)()
			pod(&o, mname(2)).Version = v35
			return o
		}, want{kind: Wait, reason: "Downgrading", check: wantMessage(mname(2))}},
		{"3.6 → 3.7 reverted while a member restarts on 3.7: no second member restarts meanwhile", to(v36), func() Observed {
			o := cluster(3) // every member on 3.7 ...
			o.LeaderID = 3
			for _, id := range []uint64{2, 3} { // ... but 2 and 3 still run 3.6
				mem(&o, id).Version, pod(&o, mname(id)).Version = v36, v36
			}
			pod(&o, mname(2)).Version = v37 // patched to 3.7, etcd not restarted on it yet
			return o
		}, want{kind: Wait, reason: "Downgrading", check: wantMessage(mname(2) + " to run " + v37)}},
		{"health gate: a restarted member's pod not Ready", to(v35), func() Observed {
			o := on36("3.5.0", enabled, 2)()
			pod(&o, mname(2)).Ready = false
			return o
		}, want{kind: Wait, reason: "Downgrading", check: wantMessage(mname(2))}},
		{"the next follower", to(v35), on36("3.5.0", enabled, 2), want{kind: UpgradeMember, id: 3, version: v35}},
		{"the leader last, after moving leadership to a 3.5 member", to(v35), func() Observed {
			o := on36("3.5.0", enabled, 2, 3)()
			mem(&o, 3).RaftIndex = 10002
			return o
		}, want{kind: MoveLeader, from: 1, to: 3, reason: "Downgrading"}},
		{"the old leader after the move", to(v35), func() Observed {
			o := on36("3.5.0", enabled, 2, 3)()
			o.LeaderID = 3
			return o
		}, want{kind: UpgradeMember, id: 1, version: v35}},
		{"operator restarted mid-way (downgrade no longer reported by 3.5 members): carries on", to(v35), func() Observed {
			o := on36("3.5.0", nil, 2, 3)()
			o.LeaderID = 3
			return o
		}, want{kind: UpgradeMember, id: 1, version: v35}},
		{"a member already on 3.5: no second enable, no second backup", to(v35), func() Observed {
			o := on36("3.5.0", nil, 2)()
			o.UpgradeBackup = &UpgradeBackup{Target: "periodic", Name: "b", State: UpgradeBackupAbsent}
			return o
		}, want{kind: UpgradeMember, id: 3, version: v35}},
		{"all on 3.5 while etcd still reports the downgrade: wait for etcd to end it", to(v35), on36("", enabled, 1, 2, 3),
			want{kind: Wait, reason: "Downgrading", check: wantMessage("end the downgrade")}},
		{"all on 3.5, downgrade over: Done", to(v35), on36("", nil, 1, 2, 3), want{kind: Done}},
		{"backup before the downgrade when a target is configured", to(v35), func() Observed {
			o := on36("3.6.0", nil)()
			o.UpgradeBackup = &UpgradeBackup{Target: "periodic", Name: "c-before-3.5.36-x", State: UpgradeBackupAbsent}
			return o
		}, want{kind: TakeUpgradeBackup, name: "c-before-3.5.36-x", version: v35}},
		{"a failed backup holds the downgrade before it is enabled", to(v35), func() Observed {
			o := on36("3.6.0", nil)()
			o.UpgradeBackup = &UpgradeBackup{Target: "periodic", Name: "b", State: UpgradeBackupFailed, Message: "bucket gone"}
			return o
		}, want{kind: Wait, reason: "UpgradeBackupFailed"}},
		{"the backup taken: enable, recording it", to(v35), func() Observed {
			o := on36("3.6.0", nil)()
			o.UpgradeBackup = &UpgradeBackup{Target: "periodic", Name: "b", State: UpgradeBackupTaken}
			return o
		}, want{kind: EnableDowngrade, check: func(t *testing.T, a Action) {
			if a.StepBackup == nil || a.StepBackup.Backup != "b" {
				t.Errorf("StepBackup = %+v, want backup b", a.StepBackup)
			}
		}}},
		{"user changed their mind: spec back on 3.6 cancels etcd's downgrade", to(v36), on36("3.5.0", enabled, 2),
			want{kind: CancelDowngrade, reason: "DowngradeCancelled", version: "3.5.0"}},
		{"after the cancel, the member already on 3.5 goes back up", to(v36), on36("3.5.0", nil, 2),
			want{kind: UpgradeMember, id: 2, version: v36, reason: "Upgrading"}},
		{"a downgrade etcd has to another minor than spec's is cancelled", to("3.6.15"), on36("3.6.0", &Downgrade{Target: "3.4.0"}),
			want{kind: CancelDowngrade}},
		{"3.7 → 3.6 is enabled too (etcd 3.7 allows its minor - 1)", to(v36), func() Observed { return cluster(3) },
			want{kind: EnableDowngrade, version: "3.6"}},
		{"3.7 → 3.5 skips a minor: refused", to(v35), func() Observed { return cluster(3) },
			want{kind: RefuseUpgrade, reason: "DowngradeRefused", check: wantMessage("set spec.version to 3.6.x first")}},
		{"3.6 → 3.4 refused", to("3.4.30"), on36("3.6.0", nil), want{kind: RefuseUpgrade, reason: "DowngradeRefused"}},
		{"3.5 → 3.4: etcd 3.5 has no storage-migrating downgrade, refused", to("3.4.30"), on36("", nil, 1, 2, 3),
			want{kind: RefuseUpgrade, reason: "DowngradeRefused", check: wantMessage("restore a backup")}},
		{"a target patch older than the one etcd pairs with 3.6 is refused", to("3.5.21"), on36("3.6.0", nil),
			want{kind: RefuseUpgrade, reason: "DowngradeRefused", check: wantMessage("3.5.32 or later")}},
		{"a major change down is refused", to("2.3.8"), on36("3.6.0", nil), want{kind: RefuseUpgrade, reason: "DowngradeRefused", check: wantMessage("major")}},
		{"an unhealthy member holds the downgrade (the grace rule first)", to(v35), func() Observed {
			o := on36("3.5.0", enabled)()
			unreachable(&o, 3, t0.Add(-time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"one-member cluster: restarted in place", func() Desired { d := desired(1); d.Version = v35; return d }, func() Observed {
			o := on36("3.5.0", enabled)()
			dropMember(&o, 2)
			dropMember(&o, 3)
			dropPod(&o, mname(2))
			dropPod(&o, mname(3))
			return o
		}, want{kind: UpgradeMember, id: 1, version: v35}},
	})
}

// A scale-up during a downgrade creates the new member on the version the cluster runs
// above the target, never below the cluster version (etcd refuses such a member).
func TestDowngradeNewMemberVersion(t *testing.T) {
	d := desired(3)
	d.Version = "3.5.36"
	o := clusterOn(2, v36)
	a := Plan(d, o)
	if a.Kind != AddLearner || a.Version != v36 {
		t.Fatalf("action = %v, want AddLearner on %s", a, v36)
	}
}

// The Upgrading condition names a downgrade etcd supports as Downgrading, not refused.
func TestSummaryDowngrade(t *testing.T) {
	d := desired(3)
	d.Version = "3.5.36"
	o := clusterOn(3, v36)
	s := Summarize(d, o, Plan(d, o))
	for _, c := range s.Conditions {
		if c.Type == v1beta2.ClusterConditionUpgrading && (c.Reason != "Downgrading" || !c.Status) {
			t.Fatalf("Upgrading condition = %+v, want True/Downgrading", c)
		}
	}
}
