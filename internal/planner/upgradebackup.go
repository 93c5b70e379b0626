package planner

import (
	"fmt"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The upgrade rule's backup before a minor step (checked by planUpgrade after the storage wait
// and the snapshot gate, before the first member of a minor step moves): the operator
// backs the cluster up to its configured EtcdBackup target, so the step can be rolled
// back with an EtcdRestore from that snapshot.
//
//   - mode skip (the opt-out) → the step starts; the first UpgradeMember says no backup
//     was taken (StepBackup.Skipped = UpgradeBackupSkipped).
//   - the step's backup was taken → the step starts, naming it (StepBackup.Backup).
//   - no target (no EtcdBackup names the cluster) → mode auto: the step starts, saying
//     no backup was taken (Skipped = NoBackupTarget); mode required: Wait(NoBackupTarget).
//   - a target, no backup yet → TakeUpgradeBackup (the controller creates the one-shot
//     EtcdBackup Observed.UpgradeBackup.Name from the target).
//   - the backup runs → Wait(UpgradeBackupPending); it failed → Wait(UpgradeBackupFailed)
//     with its reason: no member moves while it fails (it is retried with back-off).
//
// A patch change and a step some member has already taken (stepTaken) take no backup:
// the members already on the new minor cannot go back by restarting.

// UpgradeBackupMode is the cluster's choice (the upgrade-backup annotation).
type UpgradeBackupMode string

const (
	UpgradeBackupAuto     UpgradeBackupMode = "" // the default
	UpgradeBackupRequired UpgradeBackupMode = "required"
	UpgradeBackupSkip     UpgradeBackupMode = "skip"
)

// UpgradeBackupState is what became of the one-shot backup of the step.
type UpgradeBackupState int

const (
	// UpgradeBackupAbsent: not created yet.
	UpgradeBackupAbsent UpgradeBackupState = iota
	// UpgradeBackupRunning: created, no outcome yet.
	UpgradeBackupRunning
	// UpgradeBackupFailed: its last attempt failed (Message says why).
	UpgradeBackupFailed
	// UpgradeBackupTaken: it holds the snapshot.
	UpgradeBackupTaken
)

// UpgradeBackup is what the controller found for the step to Desired.Version.
type UpgradeBackup struct {
	// Target names the configured EtcdBackup the step's backup copies its storage from;
	// "" when none names the cluster.
	Target string
	// Name is the one-shot EtcdBackup of this step (for this cluster's UID and version).
	Name string
	// State of that backup, and Message: why it failed, or what it holds.
	State   UpgradeBackupState
	Message string
}

// StepBackup, on the first UpgradeMember of a minor step: the backup taken before it, or
// why none was.
type StepBackup struct {
	Backup  string
	Skipped string
}

// backupBeforeStep holds the first move of a minor step until its backup is taken (see
// above). ok is false when the step may start; step is then what to say about its
// backup on the first UpgradeMember (nil: not a minor step).
func (v *view) backupBeforeStep(target Version, need []upgradeStep) (w Action, step *StepBackup, ok bool) {
	minorStep := false
	for _, s := range need {
		if s.run.Major == target.Major && s.run.Minor != target.Minor { // up, or down (downgrade.go)
			minorStep = true
		}
	}
	if !minorStep {
		return Action{}, nil, false
	}
	if v.d.UpgradeBackup == UpgradeBackupSkip {
		return Action{}, &StepBackup{Skipped: v1beta2.ReasonUpgradeBackupSkipped}, false
	}
	b := v.o.UpgradeBackup
	if b == nil {
		b = &UpgradeBackup{}
	}
	if b.State == UpgradeBackupTaken && b.Name != "" {
		return Action{}, &StepBackup{Backup: b.Name}, false
	}
	if b.Target == "" || b.Name == "" {
		if v.d.UpgradeBackup == UpgradeBackupRequired {
			return wait(v1beta2.ReasonNoBackupTarget, fmt.Sprintf(
				"the upgrade to %s needs a backup first (upgrade-backup: required), but no EtcdBackup names this cluster in spec.clusterRef; create one, or annotate the cluster %s=%s",
				target, v1beta2.UpgradeBackupAnnotation, v1beta2.UpgradeBackupSkip), requeueWait), nil, true
		}
		return Action{}, &StepBackup{Skipped: v1beta2.ReasonNoBackupTarget}, false
	}
	switch b.State {
	case UpgradeBackupAbsent:
		return Action{Kind: TakeUpgradeBackup, Name: b.Name, Version: target.String(), Reason: v1beta2.ReasonUpgradeBackupPending,
			Message: fmt.Sprintf("backing the cluster up (EtcdBackup %s, storage of %s) before the upgrade to %s", b.Name, b.Target, target)}, nil, true
	case UpgradeBackupFailed:
		return wait(v1beta2.ReasonUpgradeBackupFailed, fmt.Sprintf(
			"the upgrade to %s is not started: the backup before it (EtcdBackup %s) failed: %s; it is retried, or annotate the cluster %s=%s to upgrade without it",
			target, b.Name, b.Message, v1beta2.UpgradeBackupAnnotation, v1beta2.UpgradeBackupSkip), requeueWait), nil, true
	default:
		return wait(v1beta2.ReasonUpgradeBackupPending, fmt.Sprintf(
			"waiting for the backup before the upgrade to %s (EtcdBackup %s)", target, b.Name), requeueShort), nil, true
	}
}
