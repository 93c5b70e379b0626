package planner

import (
	"fmt"
	"sort"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Downgrade is etcd's downgrade state as the members report it in Status (etcd >= 3.6):
// enabled, to Target ("3.5.0"). Observed.Downgrade is nil when no answering member
// reports one enabled; etcd 3.5 members report none at all.
type Downgrade struct {
	Target string
}

// minDowngradeFromMinor is the oldest minor whose etcd has the downgrade procedure this
// rule drives: etcd 3.6 added storage versioning, and with it a downgrade that migrates
// the database to the older minor's schema before any member runs the older binary
// (server/etcdserver/version in 3.6 and 3.7: allowed target = cluster minor - 1). etcd
// 3.5's downgrade targets 3.4, which this operator does not run (MinSupportedVersion).
const minDowngradeFromMinor = 6

// planDowngrade is part of the upgrade rule (upgrade.go), before the skew check: spec.version one
// minor below what the members run, or etcd's downgrade enabled. Reached only with the
// cluster fully healthy, at full size and nothing in flight:
//   - etcd's downgrade enabled and spec.version not its target (the user went back up)
//     → CancelDowngrade; the upgrade rule then moves any member already down back up.
//   - some member more than one minor above spec.version, another major, or on a minor
//     older than 3.6 → RefuseUpgrade(DowngradeRefused); nothing moves.
//   - the same health gate as an upgrade between two restarts.
//   - before anything moves (no member on the target minor yet, downgrade not enabled):
//     the backup before a minor step (upgradebackup.go), then EnableDowngrade: etcd lowers
//     the cluster version to the target minor and migrates every member's storage.
//   - Wait(Downgrading) until every member that reports a storage version reports the
//     target minor: a member restarted on the older binary needs a migrated database.
//   - members restarted on spec.version one at a time (UpgradeMember), followers first,
//     the leader last after MoveLeader, as an upgrade.
//   - every member on the target minor while etcd still reports the downgrade enabled →
//     Wait(Downgrading): etcd ends it once it sees every member on the target.
//
// Every state is read from etcd (the downgrade info, storage and member versions), so an
// operator restarted half-way carries on where etcd is.
func (v *view) planDowngrade(target Version) (Action, bool) {
	dg := v.o.Downgrade
	if dg != nil {
		dt, err := ParseVersion(dg.Target)
		if err != nil || dt.Major != target.Major || dt.Minor != target.Minor {
			return Action{Kind: CancelDowngrade, Version: dg.Target, Reason: v1beta2.ReasonDowngradeCancelled,
				Message: fmt.Sprintf("spec.version %s is not the target of etcd's downgrade in progress (%s): cancelling the downgrade", target, dg.Target)}, true
		}
	}
	var need []upgradeStep
	above, onTarget := false, false
	// restarting: a member whose pod names another version than the one it runs is
	// mid-restart (its pod was patched, the kubelet has not yet restarted etcd on it, or
	// etcd has not started): whatever version the pod names, the target or the one a
	// previous spec.version asked for (an upgrade reverted half-way). Restarting another
	// member meanwhile could take two of three down.
	var restarting *Member
	for _, m := range v.voters {
		run, spec, runOK, specOK := v.memberVersions(m)
		if !runOK && !specOK {
			continue // planUpgrade waits on it
		}
		if run.Major > target.Major || run.Major == target.Major && run.Minor > target.Minor {
			above = true
			if err := checkDowngrade(run, target); err != nil {
				return Action{Kind: RefuseUpgrade, Reason: v1beta2.ReasonDowngradeRefused, Message: fmt.Sprintf("member %s: %v", m.Name, err)}, true
			}
		}
		if run.Major == target.Major && run.Minor == target.Minor {
			onTarget = true
		}
		if runOK && specOK && spec.Compare(run) != 0 && restarting == nil {
			restarting = m
		}
		if spec.Compare(target) != 0 {
			need = append(need, upgradeStep{m, spec, run})
		}
	}
	if !above {
		if dg != nil && len(need) == 0 {
			return wait(v1beta2.ReasonDowngrading, fmt.Sprintf(
				"every member runs %s; waiting for etcd to see it and end the downgrade", target), requeueShort), true
		}
		return Action{}, false // patch steps and upgrades: planUpgrade
	}
	if restarting != nil {
		return wait(v1beta2.ReasonDowngrading, fmt.Sprintf("waiting for %s to run %s, the version its pod names, before the next restart", restarting.Name, v.podOf[restarting.ID].Version), requeueShort), true
	}
	for _, m := range v.voters {
		if m.LeaderUnknown {
			return wait(v1beta2.ReasonDowngrading, fmt.Sprintf("waiting for %s to rejoin the leader before the next restart", m.Name), requeueShort), true
		}
		if p := v.podOf[m.ID]; p != nil && !p.Ready {
			return wait(v1beta2.ReasonDowngrading, fmt.Sprintf("waiting for pod %s to be Ready before the next restart", p.Name), requeueShort), true
		}
	}
	minor := fmt.Sprintf("%d.%d", target.Major, target.Minor)
	var stepBackup *StepBackup
	if !onTarget {
		w, sb, ok := v.backupBeforeStep(target, need) // upgradebackup.go
		if ok {
			return w, true
		}
		stepBackup = sb
		if dg == nil {
			return Action{Kind: EnableDowngrade, Version: minor, Reason: v1beta2.ReasonDowngrading, StepBackup: stepBackup,
				Message: fmt.Sprintf("enabling etcd's downgrade to %s: the cluster version drops to %s and every member's storage is migrated before any member restarts", minor, minor)}, true
		}
	}
	for _, m := range v.voters {
		sv, err := ParseVersion(m.StorageVersion)
		if m.StorageVersion == "" || err != nil {
			continue
		}
		if sv.Major > target.Major || sv.Major == target.Major && sv.Minor > target.Minor {
			return wait(v1beta2.ReasonDowngrading, fmt.Sprintf(
				"waiting for etcd to migrate %s's storage from %d.%d to %s before restarting members on %s", m.Name, sv.Major, sv.Minor, minor, target), requeueShort), true
		}
	}
	sort.SliceStable(need, func(i, j int) bool { return need[i].m.Name < need[j].m.Name })
	for _, s := range need {
		if s.m != v.leader || len(v.voters) == 1 {
			a := v.downgradeAction(s.m, target)
			a.StepBackup = stepBackup
			return a, true
		}
	}
	to := v.leaderTarget(v.leader, &target, nil)
	if to == nil {
		return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before downgrading the leader", requeueShort), true
	}
	return Action{Kind: MoveLeader, From: v.leader.ID, To: to.ID, Reason: v1beta2.ReasonDowngrading,
		Message: fmt.Sprintf("moving leadership from %s to %s before downgrading %s", v.leader.Name, to.Name, v.leader.Name)}, true
}

// downgradeAction restarts m on target through the upgrade's path (a new image on its pod).
func (v *view) downgradeAction(m *Member, target Version) Action {
	return Action{Kind: UpgradeMember, ID: m.ID, Name: m.Name, Version: target.String(), Reason: v1beta2.ReasonDowngrading,
		Message: fmt.Sprintf("restarting %s on version %s (downgrade)", m.Name, target)}
}

// checkDowngrade says whether a member running cur may be downgraded to to through
// etcd's downgrade procedure: the same major, exactly one minor down, from 3.6 or later,
// to a patch of the older minor that etcd pairs with the newer one.
func checkDowngrade(cur, to Version) error {
	switch {
	case cur.Major != to.Major:
		return fmt.Errorf("major version change %s -> %s is not supported", cur, to)
	case to.Minor < cur.Minor-1:
		return fmt.Errorf("downgrade %s -> %s skips a minor version; etcd downgrades one minor at a time: set spec.version to %d.%d.x first", cur, to, cur.Major, cur.Minor-1)
	case cur.Minor < minDowngradeFromMinor:
		return fmt.Errorf("downgrade %s -> %s is not supported: etcd has a downgrade procedure from %d.%d on; restore a backup taken before the upgrade instead", cur, to, cur.Major, minDowngradeFromMinor)
	}
	// The older minor's patch must be one etcd pairs with the newer minor: the patch
	// from which it allows the upgrade (minPatchBeforeMinor) is also the oldest that
	// reads what the newer minor wrote (3.5.32's v2store checks for 3.6 data).
	if min, ok := minPatchBeforeMinor[[2]int{to.Major, to.Minor}]; ok && (to.Patch < min || to.Patch == min && to.Pre != "") {
		return fmt.Errorf("downgrade %s -> %s needs %d.%d.%d or later as the target (the oldest %d.%d patch etcd pairs with %d.%d)",
			cur, to, to.Major, to.Minor, min, to.Major, to.Minor, cur.Major, cur.Minor)
	}
	return nil
}

// downgradeAllowed reports that d.Version is a downgrade planDowngrade carries out: some
// member runs a minor above it and every such member passes checkDowngrade. CheckUpgrade
// refuses downgrades (a new member is never created below the cluster version, which
// etcd would refuse), so the status summary asks this as well.
func downgradeAllowed(d Desired, o Observed) bool {
	target, err := ParseVersion(d.Version)
	if err != nil {
		return false
	}
	above := false
	for _, m := range o.Members {
		cur, err := ParseVersion(m.Version)
		if err != nil {
			continue
		}
		if cur.Major > target.Major || cur.Major == target.Major && cur.Minor > target.Minor {
			if checkDowngrade(cur, target) != nil {
				return false
			}
			above = true
		}
	}
	return above
}
