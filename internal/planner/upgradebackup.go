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
//   - no target (no EtcdBackup names the cluster) → the claim fallback (Claim): the
//     operator creates a claim of its own, named as the one-shot backup, and backs up
//     into it through the same one-shot EtcdBackup with PVC storage
//     (TakeUpgradeBackup with ClaimBytes, sized by claimBytes from the largest member
//     database). A database too large for the largest claim the operator makes, or a
//     claim of that name that is not the cluster's, or the cluster's made smaller than
//     the database now needs on a StorageClass that cannot expand it →
//     Wait(UpgradeBackupFailed) (one that can expand is grown by the act). No
//     default StorageClass (a claim created then would never bind) → mode auto: the
//     step starts, saying no backup was taken (Skipped = NoBackupStorage); mode
//     required: Wait(NoBackupStorage). Without a Claim view (an observation that did
//     not look) the step is treated as before the fallback: auto starts it saying
//     NoBackupTarget, required waits with NoBackupTarget.
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
	// Claim is the claim fallback's view when no EtcdBackup names the cluster (Target
	// ""); nil when not looked at.
	Claim *BackupClaim
}

// BackupClaim is what the controller found for the claim fallback: the claim named as
// the one-shot backup, which the operator creates and owns.
type BackupClaim struct {
	// Foreign: a claim of that name exists and the cluster does not control it (never
	// used, never touched).
	Foreign bool
	// Exists: the cluster's own claim of that name exists (created by an earlier
	// reconcile; only the EtcdBackup remains to be created).
	Exists bool
	// Deleting: the cluster's own claim of that name is being deleted (by someone else:
	// the operator never deletes the current step's); it is made again once gone.
	Deleting bool
	// NoDefaultClass: no StorageClass is marked the default, so a claim without a class
	// would never bind (only looked at while the claim does not exist).
	NoDefaultClass bool
	// Bytes is the storage the existing claim requests (Exists), and Expandable whether
	// its StorageClass allows expansion: a claim made for a smaller database is grown
	// before it is backed up into, or, when it cannot grow, refused.
	Bytes      int64
	Expandable bool
}

// The claim the operator creates for a backup before a minor step holds one snapshot,
// about the size of the largest member's database (etcd's snapshot is the bbolt file),
// plus its checksum file: half as much again and 128 MiB on top leave room for a
// database growing while the step waits, rounded up to whole GiB, at least
// MinBackupClaimBytes. The tenant chooses how much it writes (and its quota), so the
// claim is bounded: a database needing more than MaxBackupClaimBytes is refused (an
// EtcdBackup target is needed then). etcd's own quota ceiling is 8 GiB by its advice.
const (
	MinBackupClaimBytes int64 = 1 << 30
	MaxBackupClaimBytes int64 = 32 << 30
)

// claimBytes is the size of the fallback claim for the members' databases (db: the
// largest); ok is false when it would exceed MaxBackupClaimBytes.
func claimBytes(members []Member) (need, db int64, ok bool) {
	for _, m := range members {
		db = max(db, m.DBSize)
	}
	const gib = int64(1) << 30
	if db > MaxBackupClaimBytes { // and no overflow below
		return db + db/2, db, false
	}
	need = db + db/2 + 128<<20
	need = max((need+gib-1)/gib*gib, MinBackupClaimBytes)
	return need, db, need <= MaxBackupClaimBytes
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
	if b.Target == "" && b.Name != "" && b.Claim != nil {
		return v.backupToClaim(target, b)
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

// backupToClaim is the claim fallback (see above): no EtcdBackup names the cluster.
func (v *view) backupToClaim(target Version, b *UpgradeBackup) (w Action, step *StepBackup, ok bool) {
	c := b.Claim
	switch {
	case c.Foreign:
		return wait(v1beta2.ReasonUpgradeBackupFailed, fmt.Sprintf(
			"the upgrade to %s is not started: no EtcdBackup names this cluster, and the claim %s the operator would back up into exists but is not this cluster's; delete or rename it, create an EtcdBackup naming the cluster, or annotate the cluster %s=%s",
			target, b.Name, v1beta2.UpgradeBackupAnnotation, v1beta2.UpgradeBackupSkip), requeueWait), nil, true
	case c.Deleting:
		return wait(v1beta2.ReasonUpgradeBackupPending, fmt.Sprintf(
			"waiting for the claim %s to be deleted before the upgrade to %s: it is made again for the backup once gone", b.Name, target), requeueWait), nil, true
	case !c.Exists && c.NoDefaultClass:
		if v.d.UpgradeBackup == UpgradeBackupRequired {
			return wait(v1beta2.ReasonNoBackupStorage, fmt.Sprintf(
				"the upgrade to %s needs a backup first (upgrade-backup: required), but no EtcdBackup names this cluster in spec.clusterRef and no StorageClass is the default, so the operator cannot create a claim for it; create an EtcdBackup or a default StorageClass, or annotate the cluster %s=%s",
				target, v1beta2.UpgradeBackupAnnotation, v1beta2.UpgradeBackupSkip), requeueWait), nil, true
		}
		return Action{}, &StepBackup{Skipped: v1beta2.ReasonNoBackupStorage}, false
	}
	need, db, fits := claimBytes(v.o.Members)
	if !fits {
		return wait(v1beta2.ReasonUpgradeBackupFailed, fmt.Sprintf(
			"the upgrade to %s is not started: no EtcdBackup names this cluster, and a database of %d bytes needs a larger claim for its backup (about %d bytes) than the operator creates (at most %d); create an EtcdBackup naming the cluster, or annotate the cluster %s=%s",
			target, db, need, MaxBackupClaimBytes, v1beta2.UpgradeBackupAnnotation, v1beta2.UpgradeBackupSkip), requeueWait), nil, true
	}
	if c.Exists && c.Bytes < need && !c.Expandable {
		return wait(v1beta2.ReasonUpgradeBackupFailed, fmt.Sprintf(
			"the upgrade to %s is not started: the claim %s the operator made for the backup requests %d bytes, less than the %d a database of %d bytes needs now, and its StorageClass does not allow expansion; delete the claim %s (and the EtcdBackup of that name, if any): the operator then makes one of the size needed",
			target, b.Name, c.Bytes, need, db, b.Name), requeueWait), nil, true
	}
	return Action{Kind: TakeUpgradeBackup, Name: b.Name, Version: target.String(), ClaimBytes: need, Reason: v1beta2.ReasonUpgradeBackupPending,
		Message: fmt.Sprintf("backing the cluster up (EtcdBackup %s into a claim of the operator's of %d bytes: no EtcdBackup names the cluster) before the upgrade to %s",
			b.Name, need, target)}, nil, true
}
