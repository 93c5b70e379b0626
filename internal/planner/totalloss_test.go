package planner

import (
	"testing"
	"time"
)

// lostCluster is a formed 3-member cluster of which nothing is left: no member answers,
// no pod, no claim, for an hour, with a backup available.
func lostCluster() Observed {
	return Observed{Now: t0, Bootstrapped: true, NameSeed: "seed", KnownMembers: []string{mname(1), mname(2), mname(3)},
		AllLostSince: t0.Add(-time.Hour), Backup: &BackupCandidate{Backup: "b", Path: "bucket/k_v42_2026-12-02-11:00:00", Revision: 42}}
}

func restoreAllowed(n int) func() Desired {
	return func() Desired { d := desired(n); d.RestoreFromBackup = true; return d }
}

// The no-members rule with no pod at all: a total loss is restored from a backup only with the
// opt-in, a backup, no claim, after the grace; every other case is reported or waited.
func TestPlanTotalLoss(t *testing.T) {
	runCases(t, []tcase{
		{"total loss with opt-in and backup restores into a new member", restoreAllowed(3), lostCluster,
			want{kind: RestoreFromBackup, reason: "RestoringFromBackup", version: v37, check: func(t *testing.T, a Action) {
				if a.Revision != 42 || !IsMemberName("c", a.Name) || a.Name == mname(1) || a.Name == mname(2) || a.Name == mname(3) {
					t.Errorf("want a fresh member name and the backup's revision, got %v", a)
				}
			}}},
		{"no opt-in: reported, naming the backup and the annotation", size(3), lostCluster,
			want{kind: QuorumLost, reason: "AllMembersLost", check: func(t *testing.T, a Action) {
				wantMessage("allow-restore-from-backup")(t, a)
				wantMessage("s3://bucket/k_v42_2026-12-02-11:00:00")(t, a)
			}}},
		{"no backup: reported", restoreAllowed(3), func() Observed { o := lostCluster(); o.Backup = nil; return o },
			want{kind: QuorumLost, reason: "AllMembersLost", check: wantMessage("no EtcdBackup")}},
		{"no usable backup: the problems are reported", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.Backup, o.BackupProblems = nil, []string{"EtcdBackup b: AccessDenied", "listing the backups took longer than 20s"}
			return o
		}, want{kind: QuorumLost, reason: "AllMembersLost", check: func(t *testing.T, a Action) {
			wantMessage("passed over: EtcdBackup b: AccessDenied; listing the backups took longer than 20s")(t, a)
		}}},
		{"no opt-in: the problems are reported beside the backup", size(3), func() Observed {
			o := lostCluster()
			o.BackupProblems = []string{"EtcdBackup other: spec.s3.credentialsSource Environment refused"}
			return o
		}, want{kind: QuorumLost, reason: "AllMembersLost", check: wantMessage("passed over: EtcdBackup other")}},
		{"a member claim exists: its data may survive, never restored over", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.KnownMembers = nil // the recreate rule would recreate a known member's pod on it
			o.Claims = []string{"c-old"}
			return o
		}, want{kind: QuorumLost, reason: "AllMembersLost", check: wantMessage("claims exist")}},
		{"a known member's claim exists: its pod comes back on it", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.Claims = []string{mname(2)}
			return o
		}, want{kind: CreatePod, name: mname(2)}},
		{"a pod exists (pending)", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.Pods = []Pod{{Name: mname(1), Phase: PodPending, UnhealthySince: t0.Add(-time.Hour)}}
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"a pod exists (terminating)", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.Pods = []Pod{{Name: mname(1), Phase: PodRunning, Deleting: true, UnhealthySince: t0.Add(-time.Hour)}}
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"a member answers", restoreAllowed(1), func() Observed {
			o := cluster(1)
			o.Backup, o.AllLostSince = lostCluster().Backup, t0.Add(-time.Hour)
			o.Pods = nil
			return o
		}, want{kind: Wait}},
		{"never bootstrapped: bootstrap, not restore", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.Bootstrapped = false
			return o
		}, want{kind: Bootstrap}},
		{"within the grace: wait", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.AllLostSince = t0.Add(-time.Minute)
			return o
		}, want{kind: Wait, reason: "AllMembersLost", check: func(t *testing.T, a Action) {
			if a.RequeueAfter != 4*time.Minute {
				t.Errorf("requeue after %s, want the rest of the 5m grace", a.RequeueAfter)
			}
		}}},
		{"loss not yet timed: the grace starts now", restoreAllowed(3), func() Observed {
			o := lostCluster()
			o.AllLostSince = time.Time{}
			return o
		}, want{kind: Wait, reason: "AllMembersLost"}},
		{"paused: nothing", func() Desired { d := restoreAllowed(3)(); d.Paused = true; return d }, lostCluster,
			want{kind: Wait, reason: "Paused"}},
	})
}

// restoring is lostCluster with a restore recorded at t0-1m into member c-r.
func restoring(podPhase PodPhase, token string) func() Observed {
	return func() Observed {
		o := lostCluster()
		o.BackupRestore = &BackupRestore{Backup: "b", Path: "bucket/k", Revision: 42, Member: "c-r", Token: "tok", StartedAt: t0.Add(-time.Minute)}
		if podPhase != "" {
			o.Pods = []Pod{{Name: "c-r", Phase: podPhase, RecoveryToken: token, Version: v37}}
		}
		return o
	}
}

// The backup-restore rule: a recorded restore from backup is carried out, finished or abandoned, and a
// record the pods do not bear out is forgotten without deleting anything.
func TestPlanBackupRestore(t *testing.T) {
	serving := func() Observed {
		o := restoring(PodRunning, "tok")()
		o.MembersKnown, o.LeaderID = true, 7
		o.Members = []Member{{ID: 7, Name: "c-r", Reachable: true, Revision: 42, Version: v37}}
		return o
	}
	runCases(t, []tcase{
		{"recorded, no pod yet: create it with the recorded values", restoreAllowed(3), restoring("", ""),
			want{kind: RestoreFromBackup, name: "c-r", check: func(t *testing.T, a Action) {
				if a.Revision != 42 {
					t.Errorf("revision %d, want the recorded 42", a.Revision)
				}
			}}},
		{"pod restoring: wait", restoreAllowed(3), restoring(PodPending, "tok"), want{kind: Wait, reason: "RestoringFromBackup"}},
		{"restored member serves alone as leader: finish", restoreAllowed(3), serving,
			want{kind: FinishBackupRestore, name: "c-r", id: 7, check: wantMessage("writes after revision 42 are gone")}},
		{"restored member below the backup's revision: wait", restoreAllowed(3), func() Observed {
			o := serving()
			o.Members[0].Revision = 41
			return o
		}, want{kind: Wait}},
		{"pod without the marker: forgotten, nothing deleted", restoreAllowed(3), restoring(PodRunning, ""),
			want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no()}},
		{"pod with another marker: forgotten, nothing deleted", restoreAllowed(3), restoring(PodRunning, "other"),
			want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no()}},
		{"record while a member answers: forgotten", restoreAllowed(1), func() Observed {
			o := cluster(1)
			o.BackupRestore = restoring("", "")().BackupRestore
			o.Backup, o.AllLostSince = lostCluster().Backup, t0.Add(-time.Hour)
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no()}},
		{"record while an old pod exists: forgotten", restoreAllowed(3), func() Observed {
			o := restoring("", "")()
			o.Pods = []Pod{{Name: mname(1), Phase: PodRunning}}
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no()}},
		{"record without the opt-in and no pod: forgotten", size(3), restoring("", ""),
			want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no()}},
		{"opt-in withdrawn: abandoned, its own pod deleted", size(3), restoring(PodPending, "tok"),
			want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: yes()}},
		{"its pod failed: abandoned", restoreAllowed(3), restoring(PodFailed, "tok"),
			want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: yes()}},
		// What the controller supplies once the restore is recorded: it no longer times
		// the loss nor lists backups, and the restore's own claim (or pod, seen by the API
		// server before the cache) is not evidence against the loss.
		{"recorded, own claim, no pod seen, no backup or loss time: carried on", restoreAllowed(3), func() Observed {
			o := restoring("", "")()
			o.Backup, o.AllLostSince, o.Claims = nil, time.Time{}, []string{"c-r"}
			return o
		}, want{kind: RestoreFromBackup, name: "c-r"}},
		{"recorded, no pod seen, no backup or loss time: carried on", restoreAllowed(3), func() Observed {
			o := restoring("", "")()
			o.Backup, o.AllLostSince = nil, time.Time{}
			return o
		}, want{kind: RestoreFromBackup, name: "c-r"}},
		{"recorded, own claim and its pod: wait", restoreAllowed(3), func() Observed {
			o := restoring(PodPending, "tok")()
			o.Backup, o.AllLostSince, o.Claims = nil, time.Time{}, []string{"c-r"}
			return o
		}, want{kind: Wait, reason: "RestoringFromBackup"}},
		{"recorded, another member's claim: forgotten", restoreAllowed(3), func() Observed {
			o := restoring("", "")()
			o.KnownMembers = nil
			o.Claims = []string{"c-r", "c-old"}
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no(), check: wantMessage("c-old")}},
		{"restore step running for 50m (a big download): wait", restoreAllowed(3), func() Observed {
			o := restoring(PodPending, "tok")()
			o.BackupRestore.StepStarted = true
			o.Now = o.BackupRestore.StartedAt.Add(50 * time.Minute)
			return o
		}, want{kind: Wait, reason: "RestoringFromBackup"}},
		{"restore step running past its hour: abandoned", restoreAllowed(3), func() Observed {
			o := restoring(PodPending, "tok")()
			o.BackupRestore.StepStarted = true
			o.Now = o.BackupRestore.StartedAt.Add(DefaultBackupRestoreTimeout + time.Second)
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: yes(), check: wantMessage("restore step did not finish within 1h0m0s")}},
		{"restore step done 5m ago after 50m: wait for etcd", restoreAllowed(3), func() Observed {
			o := restoring(PodRunning, "tok")()
			o.BackupRestore.StepStarted = true
			o.Now = o.BackupRestore.StartedAt.Add(55 * time.Minute)
			o.BackupRestore.StepDoneAt = o.Now.Add(-5 * time.Minute)
			return o
		}, want{kind: Wait, reason: "RestoringFromBackup"}},
		{"restore step done, etcd not serving 11m later: abandoned", restoreAllowed(3), func() Observed {
			o := restoring(PodRunning, "tok")()
			o.BackupRestore.StepStarted = true
			o.BackupRestore.StepDoneAt = o.Now.Add(-11 * time.Minute)
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: yes(), check: wantMessage("of its restore step finishing")}},
		{"restore step never started in 11m: abandoned", restoreAllowed(3), func() Observed {
			o := restoring(PodPending, "tok")()
			o.Now = o.BackupRestore.StartedAt.Add(11 * time.Minute)
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: yes(), check: wantMessage("did not start within 10m0s")}},
		{"a replayed record, its step done long ago: its pod is left in place", restoreAllowed(3), func() Observed {
			o := restoring(PodRunning, "tok")()
			o.BackupRestore.StepStarted = true
			o.BackupRestore.StepDoneAt = o.Now.Add(-2*DefaultRecoveryTimeout - time.Second)
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: no()}},
		{"a replayed record whose member is in a regrown cluster: forgotten, nothing deleted", restoreAllowed(3), func() Observed {
			o := serving()
			o.Members = append(o.Members, Member{ID: 8, Name: "c-grown", Reachable: true, Revision: 50})
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreRecordInvalid", deletePod: no()}},
		{"timed out: abandoned", restoreAllowed(3), func() Observed {
			o := restoring(PodPending, "tok")()
			o.Now = t0.Add(time.Hour)
			return o
		}, want{kind: AbortBackupRestore, reason: "BackupRestoreAborted", deletePod: yes()}},
	})
}

// checkBackupRestoreInvariants: a restore from backup starts only on proof of total
// loss with the opt-in, and a recorded one deletes a pod only on that pod's marker.
func checkBackupRestoreInvariants(t *testing.T, d Desired, o Observed, a Action, fail func(string, ...any)) {
	t.Helper()
	if r := o.BackupRestore; r != nil {
		var p *Pod
		for i := range o.Pods {
			if o.Pods[i].Name == r.Member {
				p = &o.Pods[i]
			}
		}
		marked := p != nil && p.RecoveryToken != "" && p.RecoveryToken == r.Token
		if (a.Kind == FinishBackupRestore || a.DeletePod) && !marked {
			fail("acts on a restore record that its pod does not bear out")
		}
		if a.Kind == RestoreFromBackup && (p != nil || a.Name != r.Member) {
			fail("restores again beside the recorded member's pod, or into another member")
		}
		return
	}
	if a.Kind == FinishBackupRestore || a.Kind == AbortBackupRestore {
		fail("restore step without a recorded restore")
	}
	if a.Kind != RestoreFromBackup {
		return
	}
	switch {
	case !d.RestoreFromBackup:
		fail("restore from backup without the opt-in")
	case !o.Bootstrapped:
		fail("restore into a cluster that never formed")
	case len(o.Pods) > 0 || len(o.Claims) > 0:
		fail("restore while a member pod or claim (data) exists")
	case o.MembersKnown && len(o.Members) > 0:
		fail("restore while a member answers")
	case o.Backup == nil:
		fail("restore without a backup")
	case o.AllLostSince.IsZero() || o.Now.Sub(o.AllLostSince) < d.withDefaults().QuorumLossGrace:
		fail("restore before the loss lasted the grace")
	}
}
