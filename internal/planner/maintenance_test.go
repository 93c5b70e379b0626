package planner

import (
	"testing"
	"time"
)

const mib = int64(1) << 20

// spaced is a healthy n-member cluster led by member 1 whose alarm list was read
// (empty), each member with a 10 MiB database of which 9 MiB in use and a 100 MiB quota.
func spaced(n int) Observed {
	o := cluster(n)
	o.Space.AlarmsKnown = true
	for i := range o.Members {
		o.Members[i].DBSize, o.Members[i].DBSizeInUse, o.Members[i].DBQuota = 10*mib, 9*mib, 100*mib
	}
	return o
}

func raise(o *Observed, typ string, ids ...uint64) {
	for _, id := range ids {
		o.Space.Alarms = append(o.Space.Alarms, Alarm{MemberID: id, Type: typ})
	}
}

func fragmented(o *Observed, id uint64) {
	m := mem(o, id)
	m.DBSize, m.DBSizeInUse = 40*mib, 10*mib
}

func withRun(trigger string, rev int64, done ...uint64) func(*Observed) {
	return func(o *Observed) {
		o.Space.Run = &MaintenanceRun{Trigger: trigger, StartedAt: t0.Add(-time.Minute), Revision: rev, Done: done}
	}
}

func obs(n int, edits ...func(*Observed)) func() Observed {
	return func() Observed {
		o := spaced(n)
		for _, e := range edits {
			e(&o)
		}
		return o
	}
}

func threshold(pct int) func() Desired {
	return func() Desired { d := desired(3); d.Maintenance.DefragThresholdPercent = pct; return d }
}

func noSpace(o *Observed) { raise(o, AlarmNoSpace, 2) }

// full: every member's database at 95 MiB of its 100 MiB quota.
func full(o *Observed) {
	for i := range o.Members {
		o.Members[i].DBSize = 95 * mib
	}
}

// The maintenance rule: scheduled and threshold-triggered defragmentation.
func TestPlanDefragmentation(t *testing.T) {
	due := func(o *Observed) { o.Space.ScheduleDue = true }
	runCases(t, []tcase{
		{"nothing due: done", size(3), obs(3), want{kind: Done}},
		{"no alarm list: no maintenance", size(3), obs(3, due, func(o *Observed) { o.Space.AlarmsKnown = false }), want{kind: Done}},
		{"schedule due: first follower by name", size(3), obs(3, due), want{kind: Defragment, id: 2, name: mname(2), check: wantTrigger(TriggerSchedule)}},
		{"scheduled run continues with the next follower", size(3), obs(3, withRun(TriggerSchedule, 0, 2)), want{kind: Defragment, id: 3}},
		{"scheduled run: leader last, leadership moved first", size(3), obs(3, withRun(TriggerSchedule, 0, 2, 3)),
			want{kind: MoveLeader, from: 1, check: wantTrigger(TriggerSchedule)}},
		{"scheduled run: old leader defragmented after the move", size(3), obs(3, withRun(TriggerSchedule, 0, 2, 3), func(o *Observed) { o.LeaderID = 2 }),
			want{kind: Defragment, id: 1}},
		{"scheduled run finished", size(3), obs(3, withRun(TriggerSchedule, 0, 1, 2, 3)), want{kind: FinishMaintenance, reason: "DefragmentationFinished"}},
		{"one-member cluster defragmented in place", size(1), obs(1, due), want{kind: Defragment, id: 1}},
		{"next member waits for the last to answer", size(3), obs(3, withRun(TriggerSchedule, 0, 2), func(o *Observed) {
			unreachable(o, 2, t0.Add(-time.Second))
		}), want{kind: Wait}},
		{"next member waits for the last to follow the leader", size(3), obs(3, withRun(TriggerSchedule, 0, 2), func(o *Observed) {
			mem(o, 2).LeaderUnknown = true
		}), want{kind: Wait, reason: "MaintenanceInProgress", check: wantMessage(mname(2))}},
		{"upgrade before maintenance", size(3), func() Observed {
			o := upgrading(3, 1)()
			o.Space = SpaceObserved{AlarmsKnown: true, ScheduleDue: true}
			return o
		}, want{kind: UpgradeMember}},
		{"scale-up before maintenance", size(5), obs(3, due), want{kind: AddLearner}},
		{"paused: nothing", func() Desired { d := desired(3); d.Paused = true; return d }, obs(3, due), want{kind: Wait, reason: "Paused"}},

		{"threshold: a fragmented follower", threshold(150), obs(3, func(o *Observed) { fragmented(o, 3) }),
			want{kind: Defragment, id: 3, check: wantTrigger(TriggerThreshold)}},
		{"threshold off: nothing", threshold(0), obs(3, func(o *Observed) { fragmented(o, 3) }), want{kind: Done}},
		{"threshold not reached", threshold(500), obs(3, func(o *Observed) { fragmented(o, 3) }), want{kind: Done}},
		{"threshold: too little to free", threshold(150), obs(3, func(o *Observed) {
			m := mem(o, 3)
			m.DBSize, m.DBSizeInUse = 512<<10, 100<<10
		}), want{kind: Done}},
		{"threshold: cooldown after the last run", threshold(150), obs(3, func(o *Observed) {
			fragmented(o, 3)
			o.Space.LastFinished = t0.Add(-ThresholdCooldown / 2)
		}), want{kind: Done}},
		{"threshold: after the cooldown", threshold(150), obs(3, func(o *Observed) {
			fragmented(o, 3)
			o.Space.LastFinished = t0.Add(-ThresholdCooldown)
		}), want{kind: Defragment, id: 3}},
		{"threshold run skips members under it", threshold(150), obs(3, withRun(TriggerThreshold, 0, 3), func(o *Observed) { fragmented(o, 3) }),
			want{kind: FinishMaintenance}},
		{"threshold: fragmented leader after leadership moves", threshold(150), obs(3, func(o *Observed) { fragmented(o, 1) }),
			want{kind: MoveLeader, from: 1}},
	})
}

// The maintenance rule: NOSPACE remediation.
func TestPlanNoSpace(t *testing.T) {
	rev := func(r int64) func(*Observed) {
		return func(o *Observed) {
			for i := range o.Members {
				o.Members[i].Revision = r
			}
		}
	}
	runCases(t, []tcase{
		{"NOSPACE: compact at the current revision first", size(3), obs(3, noSpace, full, rev(700)),
			want{kind: Compact, reason: "NoSpaceRemediating", check: wantRevision(700)}},
		{"NOSPACE: highest revision any member reports", size(3), obs(3, noSpace, full, rev(700), func(o *Observed) { mem(o, 3).Revision = 705 }),
			want{kind: Compact, check: wantRevision(705)}},
		{"NOSPACE interrupts a scheduled run", size(3), obs(3, noSpace, full, withRun(TriggerSchedule, 0, 2)), want{kind: Compact}},
		{"NOSPACE: defragment followers after compacting", size(3), obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700)),
			want{kind: Defragment, id: 2, reason: "NoSpaceRemediating", check: wantTrigger(TriggerNoSpace)}},
		{"NOSPACE: leader last, after moving leadership", size(3), obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700, 2, 3)),
			want{kind: MoveLeader, from: 1}},
		// What is left to defragment is what etcd reports over the line now, not what the
		// recorded run says is done: status may lag the reconcile that recorded a member
		// (CI: a member defragmented twice in a row, "18432000 → 548864" then
		// "548864 → 548864").
		{"NOSPACE: a member defragmented but not yet recorded is not defragmented again", size(3),
			obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700), func(o *Observed) { mem(o, 2).DBSize = 548864 }),
			want{kind: Defragment, id: 3, reason: "NoSpaceRemediating"}},
		{"NOSPACE: followers defragmented but one not recorded: on to the leader", size(3),
			obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700, 2), func(o *Observed) { mem(o, 3).DBSize = 548864 }),
			want{kind: MoveLeader, from: 1}},
		{"NOSPACE: every member under the line though none is recorded: disarmed", size(3),
			obs(3, noSpace, rev(700), withRun(TriggerNoSpace, 700)),
			want{kind: DisarmAlarm, check: wantAlarm(AlarmNoSpace)}},
		{"NOSPACE: a follower under the line from the start is left alone", size(3),
			obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700), func(o *Observed) { mem(o, 2).DBSize = 80 * mib }),
			want{kind: Defragment, id: 3}},
		{"NOSPACE: a member at the line exactly is under it", size(3),
			obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700), func(o *Observed) { mem(o, 2).DBSize = 90 * mib }),
			want{kind: Defragment, id: 3}},
		{"NOSPACE: a recorded member still over the line is not defragmented again", size(3),
			obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700, 2)),
			want{kind: Defragment, id: 3}},
		{"NOSPACE: not disarmed while space is not back", size(3), obs(3, noSpace, full, rev(700), withRun(TriggerNoSpace, 700, 1, 2, 3)),
			want{kind: Wait, reason: "NoSpaceDataTooLarge", check: wantMessage("quotaBackendBytes")}},
		{"NOSPACE: one member short of the margin keeps the alarm", size(3), obs(3, noSpace, rev(700), withRun(TriggerNoSpace, 700, 1, 2, 3), func(o *Observed) {
			mem(o, 3).DBSize = 91 * mib
		}), want{kind: Wait, reason: "NoSpaceDataTooLarge", check: wantMessage(mname(3))}},
		{"NOSPACE: disarmed once every member is below the margin", size(3), obs(3, noSpace, rev(700), withRun(TriggerNoSpace, 700, 1, 2, 3)),
			want{kind: DisarmAlarm, check: wantAlarm(AlarmNoSpace)}},
		{"NOSPACE: the configured quota for a member that reports none", func() Desired {
			d := desired(3)
			d.Maintenance.QuotaBackendBytes = 10 * mib
			return d
		}, obs(3, noSpace, rev(700), withRun(TriggerNoSpace, 700, 1, 2, 3), func(o *Observed) {
			for i := range o.Members {
				o.Members[i].DBQuota = 0
			}
		}), want{kind: Wait, reason: "NoSpaceDataTooLarge"}},
		{"NOSPACE: data deleted since the compaction, a new round", size(3), obs(3, noSpace, full, rev(900), withRun(TriggerNoSpace, 700, 1, 2, 3)),
			want{kind: Compact, check: wantRevision(900)}},
		{"NOSPACE gone: the run is over", size(3), obs(3, withRun(TriggerNoSpace, 700, 1, 2, 3)), want{kind: FinishMaintenance}},
		{"NOSPACE: waits for a defragmented member to answer", size(3), obs(3, noSpace, full, withRun(TriggerNoSpace, 700, 2), func(o *Observed) {
			mem(o, 2).LeaderUnknown = true
		}), want{kind: Wait, reason: "MaintenanceInProgress"}},
		{"NOSPACE: a dead member is replaced first", size(3), obs(3, noSpace, full, func(o *Observed) {
			unreachable(o, 3, t0.Add(-time.Hour))
			dropPod(o, mname(3))
		}), want{kind: ReplaceMember, id: 3}},
	})
}

// The corrupt rule: a member etcd found CORRUPT is replaced from its healthy peers.
func TestPlanCorrupt(t *testing.T) {
	corrupt := func(ids ...uint64) func(*Observed) { return func(o *Observed) { raise(o, AlarmCorrupt, ids...) } }
	runCases(t, []tcase{
		{"a corrupt follower is replaced", size(3), obs(3, corrupt(3)),
			want{kind: ReplaceMember, id: 3, deletePod: yes(), reason: "ReplacingCorruptMember"}},
		{"a corrupt leader hands leadership to a healthy voter first", size(3), obs(3, corrupt(1), func(o *Observed) {
			mem(o, 2).RaftIndex, mem(o, 3).RaftIndex = 9000, 10001
		}), want{kind: MoveLeader, from: 1, to: 3}},
		{"never the last voter", size(1), obs(1, corrupt(1)), want{kind: Wait, reason: "CorruptMemberNotReplaceable", check: wantMessage("last copy")}},
		{"not when the named members are no minority", size(3), obs(3, corrupt(2, 3)),
			want{kind: Wait, reason: "CorruptMemberNotReplaceable", check: wantMessage("majority")}},
		{"not when the others lack an alive quorum", size(3), obs(3, corrupt(3), func(o *Observed) {
			unreachable(o, 2, t0.Add(-time.Second))
		}), want{kind: Wait}},
		{"one at a time: the replacement is added first", size(5), obs(4, corrupt(3)), want{kind: AddLearner}},
		{"second corrupt member of five after the first is replaced", size(5), obs(5, corrupt(4, 5)), want{kind: ReplaceMember, id: 4}},
		{"a whole-cluster CORRUPT (member 0) is never disarmed nor acted on", size(3), obs(3, corrupt(0)),
			want{kind: Wait, reason: "CorruptMemberNotReplaceable", check: wantMessage("whole cluster")}},
		{"nor when it comes with a named member", size(5), obs(5, corrupt(0, 3)),
			want{kind: Wait, reason: "CorruptMemberNotReplaceable", check: wantMessage("whole cluster")}},
		{"alarm of a member no longer in the cluster is disarmed", size(3), obs(3, corrupt(9)),
			want{kind: DisarmAlarm, id: 9, check: wantAlarm(AlarmCorrupt)}},
		{"a learner in flight is finished first", size(3), obs(2, corrupt(2), func(o *Observed) {
			withLearner(o, 99, "c-new", true, true, true, 10000)
		}), want{kind: PromoteLearner, id: 99}},
		{"no alarm list: nothing", size(3), obs(3, corrupt(3), func(o *Observed) { o.Space.AlarmsKnown = false }), want{kind: Done}},
	})
}

func wantTrigger(tr string) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if a.Trigger != tr {
			t.Errorf("trigger = %q, want %q (action %v)", a.Trigger, tr, a)
		}
	}
}

func wantRevision(rev int64) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if a.Revision != rev {
			t.Errorf("revision = %d, want %d (action %v)", a.Revision, rev, a)
		}
	}
}

func wantAlarm(alarm string) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if a.Alarm != alarm {
			t.Errorf("alarm = %q, want %q (action %v)", a.Alarm, alarm, a)
		}
	}
}
