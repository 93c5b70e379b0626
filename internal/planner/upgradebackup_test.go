package planner

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The upgrade rule's backup before a minor step: the first member moves only once the step's
// backup is taken (or none can or should be), never while it runs or fails.
func TestBackupBeforeMinorStep(t *testing.T) {
	const bname = "c-before-3.7.3-seed"
	with := func(b *UpgradeBackup, done ...uint64) func() Observed {
		return func() Observed {
			o := upgrading(3, 1, done...)()
			o.UpgradeBackup = b
			return o
		}
	}
	mode := func(m UpgradeBackupMode) func() Desired {
		return func() Desired { d := desired(3); d.UpgradeBackup = m; return d }
	}
	stepBackup := func(backup, skipped string) func(t *testing.T, a Action) {
		return func(t *testing.T, a Action) {
			t.Helper()
			if a.StepBackup == nil || a.StepBackup.Backup != backup || a.StepBackup.Skipped != skipped {
				t.Errorf("StepBackup %+v, want backup %q skipped %q", a.StepBackup, backup, skipped)
			}
		}
	}
	noStepBackup := func(t *testing.T, a Action) {
		t.Helper()
		if a.StepBackup != nil {
			t.Errorf("StepBackup %+v on a move that does not start a minor step", a.StepBackup)
		}
	}
	target := func(s UpgradeBackupState, msg string) *UpgradeBackup {
		return &UpgradeBackup{Target: "periodic", Name: bname, State: s, Message: msg}
	}
	claim := func(c BackupClaim) *UpgradeBackup { return &UpgradeBackup{Name: bname, Claim: &c} }
	withDB := func(b *UpgradeBackup, db int64) func() Observed {
		return func() Observed {
			o := with(b)()
			for i := range o.Members {
				o.Members[i].DBSize = db / int64(i+1) // the largest counts
			}
			return o
		}
	}
	claimBytesOf := func(n int64) func(t *testing.T, a Action) {
		return func(t *testing.T, a Action) {
			t.Helper()
			if a.ClaimBytes != n {
				t.Errorf("ClaimBytes %d, want %d", a.ClaimBytes, n)
			}
		}
	}
	runCases(t, []tcase{
		{"no target: back up into a claim of the operator's, nothing moves", size(3), withDB(claim(BackupClaim{}), 100<<20),
			want{kind: TakeUpgradeBackup, name: bname, version: v37, reason: v1beta2.ReasonUpgradeBackupPending, check: claimBytesOf(1 << 30)}},
		{"no target, required: the claim's backup is a backup", mode(UpgradeBackupRequired), withDB(claim(BackupClaim{}), 3<<30),
			want{kind: TakeUpgradeBackup, name: bname, check: claimBytesOf(5 << 30)}},
		{"no target, the claim already made: the backup is taken into it", size(3), withDB(claim(BackupClaim{Exists: true, NoDefaultClass: true, Bytes: 1 << 30}), 1<<20),
			want{kind: TakeUpgradeBackup, name: bname, check: claimBytesOf(1 << 30)}},
		{"no target, no default StorageClass: the step starts, saying why no backup", size(3), with(claim(BackupClaim{NoDefaultClass: true})),
			want{kind: UpgradeMember, id: 2, version: v37, check: stepBackup("", v1beta2.ReasonNoBackupStorage)}},
		{"no target, no default StorageClass, required: wait, naming both ways out", mode(UpgradeBackupRequired), with(claim(BackupClaim{NoDefaultClass: true})),
			want{kind: Wait, reason: v1beta2.ReasonNoBackupStorage, check: func(t *testing.T, a Action) {
				wantMessage("StorageClass")(t, a)
				wantMessage(v1beta2.UpgradeBackupAnnotation)(t, a)
			}}},
		{"no target, no default StorageClass, opted out: starts without", mode(UpgradeBackupSkip), with(claim(BackupClaim{NoDefaultClass: true})),
			want{kind: UpgradeMember, id: 2, check: stepBackup("", v1beta2.ReasonUpgradeBackupSkipped)}},
		{"no target, the claim made too small, its class cannot expand: refused, saying to delete it", size(3),
			withDB(claim(BackupClaim{Exists: true, Bytes: 1 << 30}), 2<<30),
			want{kind: Wait, reason: v1beta2.ReasonUpgradeBackupFailed, check: func(t *testing.T, a Action) {
				wantMessage("delete the claim "+bname)(t, a)
				wantMessage("does not allow expansion")(t, a)
			}}},
		{"no target, the claim made too small, its class expands: the act grows it", size(3),
			withDB(claim(BackupClaim{Exists: true, Bytes: 1 << 30, Expandable: true}), 2<<30),
			want{kind: TakeUpgradeBackup, name: bname, check: claimBytesOf(4 << 30)}},
		{"no target, the claim large enough: backed up into", size(3),
			withDB(claim(BackupClaim{Exists: true, Bytes: 4 << 30}), 2<<30),
			want{kind: TakeUpgradeBackup, name: bname, check: claimBytesOf(4 << 30)}},
		{"no target, a claim of that name not the cluster's: refused, never used", size(3), with(claim(BackupClaim{Foreign: true})),
			want{kind: Wait, reason: v1beta2.ReasonUpgradeBackupFailed, check: wantMessage("not this cluster's")}},
		{"no target, the claim being deleted: wait for it to go", size(3), with(claim(BackupClaim{Deleting: true})),
			want{kind: Wait, reason: v1beta2.ReasonUpgradeBackupPending, check: wantMessage("deleted")}},
		{"no target, a database too large for the operator's claim: refused", size(3), withDB(claim(BackupClaim{}), 30<<30),
			want{kind: Wait, reason: v1beta2.ReasonUpgradeBackupFailed, check: wantMessage("EtcdBackup naming the cluster")}},
		{"no target, claim fallback, a step already taken: no backup", size(3), with(claim(BackupClaim{}), 2),
			want{kind: UpgradeMember, id: 3, check: noStepBackup}},
		{"a target, no backup yet: take it, nothing moves", size(3), with(target(UpgradeBackupAbsent, "")),
			want{kind: TakeUpgradeBackup, name: bname, version: v37, reason: v1beta2.ReasonUpgradeBackupPending, check: wantMessage("periodic")}},
		{"the backup runs: wait", size(3), with(target(UpgradeBackupRunning, "")),
			want{kind: Wait, reason: v1beta2.ReasonUpgradeBackupPending, check: wantMessage(bname)}},
		{"the backup failed: the step is refused with its reason", size(3), with(target(UpgradeBackupFailed, "dial tcp: connection refused")),
			want{kind: Wait, reason: v1beta2.ReasonUpgradeBackupFailed, check: wantMessage("connection refused")}},
		{"the backup failed, opted out: the step starts without it", mode(UpgradeBackupSkip), with(target(UpgradeBackupFailed, "x")),
			want{kind: UpgradeMember, id: 2, version: v37, check: stepBackup("", v1beta2.ReasonUpgradeBackupSkipped)}},
		{"the backup taken: the first follower moves, naming it", size(3), with(target(UpgradeBackupTaken, "")),
			want{kind: UpgradeMember, id: 2, version: v37, check: stepBackup(bname, "")}},
		{"taken, required: the step starts", mode(UpgradeBackupRequired), with(target(UpgradeBackupTaken, "")),
			want{kind: UpgradeMember, id: 2, check: stepBackup(bname, "")}},
		{"no target: the step starts, saying no backup was taken", size(3), with(nil),
			want{kind: UpgradeMember, id: 2, version: v37, check: stepBackup("", v1beta2.ReasonNoBackupTarget)}},
		{"no target, required: wait, naming the opt-out", mode(UpgradeBackupRequired), with(&UpgradeBackup{Name: bname}),
			want{kind: Wait, reason: v1beta2.ReasonNoBackupTarget, check: wantMessage(v1beta2.UpgradeBackupAnnotation)}},
		{"a step already taken takes no backup, whatever its state", size(3), with(target(UpgradeBackupFailed, "x"), 2),
			want{kind: UpgradeMember, id: 3, check: noStepBackup}},
		{"the leader last, after the backup: no second backup", size(3), with(target(UpgradeBackupAbsent, ""), 2, 3),
			want{kind: MoveLeader, from: 1}},
		{"the storage wait comes first", size(3), func() Observed {
			o := with(target(UpgradeBackupAbsent, ""))()
			for i := range o.Members {
				o.Members[i].StorageVersion = "3.5.0"
			}
			return o
		}, want{kind: Wait, reason: v1beta2.ReasonUpgradeInProgress}},
		{"a one-member cluster backs up before its restart", size(1), func() Observed {
			o := upgrading(1, 1)()
			o.UpgradeBackup = target(UpgradeBackupAbsent, "")
			return o
		}, want{kind: TakeUpgradeBackup, name: bname}},
		{"a patch step takes no backup", func() Desired { d := desired(3); d.Version = "3.6.17"; return d }, func() Observed {
			o := clusterOn(3, v36)
			o.UpgradeBackup = target(UpgradeBackupAbsent, "")
			return o
		}, want{kind: UpgradeMember, id: 2, version: "3.6.17", check: noStepBackup}},
	})
}

// The fallback claim holds one snapshot of the largest database with room to spare, in
// whole GiB, bounded both ways.
func TestClaimBytes(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name string
		dbs  []int64
		need int64
		ok   bool
	}{
		{"no member answered: the least", nil, gib, true},
		{"a new cluster: the least", []int64{20 << 10, 25 << 10}, gib, true},
		{"the largest database counts", []int64{100 << 20, 700 << 20, 5 << 20}, 2 * gib, true},
		{"half again and 128 MiB, rounded up", []int64{2 * gib}, 4 * gib, true},
		{"just fits the most", []int64{21 * gib}, 32 * gib, true},
		{"too large: refused", []int64{22 * gib}, 34 * gib, false},
		{"absurdly large: refused without overflow", []int64{1 << 62}, (1 << 62) + (1 << 61), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []Member
			for _, db := range tc.dbs {
				ms = append(ms, Member{DBSize: db})
			}
			need, _, ok := claimBytes(ms)
			if need != tc.need || ok != tc.ok {
				t.Errorf("claimBytes(%v) = %d, %v; want %d, %v", tc.dbs, need, ok, tc.need, tc.ok)
			}
		})
	}
}
