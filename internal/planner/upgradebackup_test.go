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
	runCases(t, []tcase{
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
