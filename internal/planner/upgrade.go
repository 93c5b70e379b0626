package planner

import (
	"errors"
	"fmt"
	"sort"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planUpgrade is the upgrade rule, the last of the membership rules: some member's version differs from Version.
// Reached only with the cluster fully healthy, at full size and nothing in flight:
//   - skew: no major change, no minor downgrade, no skipped minor (3.6 → 3.7 ok,
//     3.5 → 3.7 refused; patch changes either way are fine) → otherwise RefuseUpgrade
//     with the reason. Nothing else is blocked.
//   - a member whose pod has the new version but which does not run it yet → Wait: one
//     member restarts at a time.
//   - a voter that answers but names no leader (restarted a moment ago, not yet back in
//     contact with the leader), or whose pod is not Ready → Wait: the health gate
//     between two restarts. Ready matters beyond etcd: the client Service publishes
//     only Ready pods, and the PodDisruptionBudget counts the others as disrupted.
//   - a minor step waits until every database that reports a storage version is at
//     the previous minor's (waitForStorage): etcd raises it only after the previous
//     step has finished, and the next minor does not start on older storage.
//   - before the first member of a minor step moves, a backup of the cluster to its
//     configured EtcdBackup target (upgradebackup.go).
//   - followers first, one at a time, by name → UpgradeMember; the leader last, after
//     MoveLeader to an upgraded voter (one election instead of one per restart). A
//     one-member cluster is restarted in place: there is nowhere to move leadership.
//
// Every member on Version: Done (Ready).
func (v *view) planUpgrade() Action {
	target, err := ParseVersion(v.d.Version)
	if err != nil {
		return Action{Kind: RefuseUpgrade, Reason: v1beta2.ReasonInvalidVersion, Message: err.Error()}
	}
	if a, ok := v.planDowngrade(target); ok { // downgrade.go
		return a
	}
	// A minor step some member has already taken (under an older operator, which did
	// not know the minimum patch) is finished: neither going back nor staying mixed is
	// better than completing it.
	stepTaken := false
	for _, m := range v.voters {
		if run, err := ParseVersion(m.Version); err == nil && run.Major == target.Major && run.Minor == target.Minor {
			stepTaken = true
		}
	}
	var need []upgradeStep
	for _, m := range v.voters {
		run, spec, runOK, specOK := v.memberVersions(m)
		if !runOK && !specOK {
			return wait(v1beta2.ReasonVersionUnknown, fmt.Sprintf("cannot tell which version %s runs", m.Name), requeueWait)
		}
		if err := CheckSkew(run, target); err != nil && !(stepTaken && errors.Is(err, errBelowMinPatch)) {
			return Action{Kind: RefuseUpgrade, Reason: v1beta2.ReasonUpgradeRefused, Message: fmt.Sprintf("member %s: %v", m.Name, err)}
		}
		// Its pod names another version than it runs: it is mid-restart, on the target or
		// on a version an earlier spec.version asked for (a patch changed half-way). The
		// next restart waits for it, or two members could be down at once.
		if runOK && specOK && spec.Compare(run) != 0 {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf("waiting for %s to run %s, the version its pod names", m.Name, spec), requeueShort)
		}
		if spec.Compare(target) != 0 {
			need = append(need, upgradeStep{m, spec, run})
		}
	}
	if len(need) == 0 {
		return Action{Kind: Done, Reason: v1beta2.ReasonReady, Message: fmt.Sprintf("%d members healthy, version %s", len(v.voters), target)}
	}
	// Health gate between two restarts: every voter follows the leader again
	// and its pod is Ready, so the client Service and the PodDisruptionBudget
	// count it again before the next member goes down.
	for _, m := range v.voters {
		if m.LeaderUnknown {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf("waiting for %s to rejoin the leader before the next restart", m.Name), requeueShort)
		}
		if p := v.podOf[m.ID]; p != nil && !p.Ready {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf("waiting for pod %s to be Ready before the next restart", p.Name), requeueShort)
		}
	}
	if w, ok := v.waitForStorage(target, need); ok {
		return w
	}
	if w, ok := v.waitForSnapshotPast(target, need); ok && !stepTaken { // snapshotgate.go
		return w
	}
	var stepBackup *StepBackup
	if !stepTaken {
		w, sb, ok := v.backupBeforeStep(target, need) // upgradebackup.go
		if ok {
			return w
		}
		stepBackup = sb
	}
	sort.SliceStable(need, func(i, j int) bool { return need[i].m.Name < need[j].m.Name })
	for _, s := range need {
		if s.m != v.leader {
			a := v.upgradeAction(s.m, target)
			a.StepBackup = stepBackup
			return a
		}
	}
	// Only the leader is left.
	if len(v.voters) == 1 {
		a := v.upgradeAction(v.leader, target)
		a.StepBackup = stepBackup
		return a
	}
	to := v.leaderTarget(v.leader, &target, nil)
	if to == nil {
		return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before upgrading the leader", requeueShort)
	}
	return Action{Kind: MoveLeader, From: v.leader.ID, To: to.ID, Reason: v1beta2.ReasonUpgrading,
		Message: fmt.Sprintf("moving leadership from %s to %s before upgrading %s", v.leader.Name, to.Name, v.leader.Name)}
}

// stepsFromMinorBefore reports whether need holds a step that runs the minor just
// before target's: a minor step, the only kind waitForStorage and waitForSnapshotPast
// hold.
func stepsFromMinorBefore(target Version, need []upgradeStep) bool {
	for _, s := range need {
		if s.run.Major == target.Major && s.run.Minor == target.Minor-1 {
			return true
		}
	}
	return false
}

// waitForStorage holds a minor step until the previous one has finished inside etcd:
// a member restarted on the next minor needs every database at least at the previous
// minor's storage version, which etcd writes only some seconds after the last member
// came up on that minor (once the leader has raised the cluster version). Two steps
// applied back to back (3.5 → 3.6, then at once 3.6 → 3.7) otherwise restart the first
// member on 3.7 while its database is still at 3.5, and it crash-loops.
// Members that report no storage version (etcd < 3.6) are not held.
func (v *view) waitForStorage(target Version, need []upgradeStep) (Action, bool) {
	if !stepsFromMinorBefore(target, need) {
		return Action{}, false
	}
	for _, m := range v.voters {
		sv, err := ParseVersion(m.StorageVersion)
		if m.StorageVersion == "" || err != nil {
			continue
		}
		if sv.Major < target.Major || sv.Major == target.Major && sv.Minor < target.Minor-1 {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf(
				"waiting for etcd to finish the %d.%d upgrade: %s's storage is still at %d.%d (etcd raises it once every member runs %d.%d); a %d.%d member would not start on it",
				target.Major, target.Minor-1, m.Name, sv.Major, sv.Minor, target.Major, target.Minor-1, target.Major, target.Minor), requeueShort), true
		}
	}
	return Action{}, false
}

// upgradeStep is a voter still to be moved to the target: the version its pod names
// (spec) and the one it runs.
type upgradeStep struct {
	m         *Member
	spec, run Version
}

// upgradeAction restarts m on target.
func (v *view) upgradeAction(m *Member, target Version) Action {
	return Action{Kind: UpgradeMember, ID: m.ID, Name: m.Name, Version: target.String(), Reason: v1beta2.ReasonUpgrading,
		Message: fmt.Sprintf("restarting %s on version %s", m.Name, target)}
}

// CheckUpgrade reports whether the cluster may be moved to d.Version: nil
// when every member whose version is known is within the allowed skew.
func CheckUpgrade(d Desired, o Observed) error {
	target, err := ParseVersion(d.Version)
	if err != nil {
		return err
	}
	pods := map[string]*Pod{}
	for i := range o.Pods {
		pods[o.Pods[i].Name] = &o.Pods[i]
	}
	stepTaken := false // as in planUpgrade
	for _, m := range o.Members {
		if run, err := ParseVersion(m.Version); err == nil && run.Major == target.Major && run.Minor == target.Minor {
			stepTaken = true
		}
	}
	for _, m := range o.Members {
		s := m.Version
		if s == "" && pods[m.Name] != nil {
			s = pods[m.Name].Version
		}
		cur, err := ParseVersion(s)
		if err != nil {
			continue
		}
		if err := CheckSkew(cur, target); err != nil && !(stepTaken && errors.Is(err, errBelowMinPatch)) {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
	}
	return nil
}
