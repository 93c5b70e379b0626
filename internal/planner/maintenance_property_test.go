package planner

import (
	"math/rand"
	"slices"
	"time"
)

// The safety rules of space management, re-derived independently of maintenance.go and
// checked on every planned action by checkInvariants.

// checkCorruptReplacement: a member is replaced on a CORRUPT alarm only if the alarm
// names it, the named members are a minority, it does not lead, and the cluster is at
// full size (one replacement at a time).
func checkCorruptReplacement(fail func(string, ...any), o Observed, m *Member, voters int) {
	named := 0
	for _, id := range alarmed(o.Space.Alarms, AlarmCorrupt) {
		for _, om := range o.Members {
			if om.ID == id && !om.IsLearner {
				named++
			}
		}
	}
	if !o.Space.AlarmsKnown || !slices.Contains(alarmed(o.Space.Alarms, AlarmCorrupt), m.ID) {
		fail("replaces an alive member that no CORRUPT alarm names")
	}
	if 2*named >= voters {
		fail("replaces a CORRUPT member while %d of %d voters are named", named, voters)
	}
}

// checkMaintenance: defragmentation, compaction and disarming happen only on a cluster
// whose every member is alive and follows the leader; NOSPACE is disarmed only when every
// member's database is at least NoSpaceMarginPercent below its quota; CORRUPT only for a
// member no longer in the cluster.
func checkMaintenance(fail func(string, ...any), d Desired, o Observed, a Action, alive func(*Member) bool) {
	if !o.MembersKnown || !o.Space.AlarmsKnown {
		fail("maintenance without a member list and an alarm list")
	}
	if a.Kind == Defragment || a.Kind == Compact {
		for i := range o.Members {
			if m := &o.Members[i]; !alive(m) || m.LeaderUnknown {
				fail("%v while %x is not alive or follows no leader", a.Kind, m.ID)
			}
		}
	}
	if a.Kind == Defragment {
		if o.Space.Run != nil && slices.Contains(o.Space.Run.Done, a.ID) && o.Space.Run.Trigger == a.Trigger {
			fail("defragments %x twice in one run", a.ID)
		}
		if a.ID == o.LeaderID && len(o.Members) > 1 {
			fail("defragments the leader without moving leadership")
		}
		if a.Trigger == TriggerNoSpace {
			// Only on what etcd reports now, never on the recorded run alone: a member
			// already under the disarm line (just defragmented, status not caught up)
			// has nothing to give the remediation.
			for _, m := range o.Members {
				if m.ID == a.ID && m.DBSize*100 <= quotaOf(d, m)*(100-NoSpaceMarginPercent) {
					fail("defragments %x for NOSPACE while its database, %d bytes, is already under the disarm line", m.ID, m.DBSize)
				}
			}
		}
	}
	if a.Kind == DisarmAlarm && a.Alarm == AlarmNoSpace {
		for _, m := range o.Members {
			if q := quotaOf(d, m); m.DBSize*100 > q*(100-NoSpaceMarginPercent) {
				fail("disarms NOSPACE while %x holds %d of %d bytes", m.ID, m.DBSize, q)
			}
		}
		if r := o.Space.Run; r == nil || r.Revision == 0 {
			fail("disarms NOSPACE before compacting")
		}
	}
	if a.Kind == DisarmAlarm && a.Alarm == AlarmCorrupt {
		if a.ID == 0 {
			fail("disarms CORRUPT for every member: etcd's member 0 means it could not tell which copy diverged")
		}
		for _, m := range o.Members {
			if m.ID == a.ID {
				fail("disarms CORRUPT while the member it names is in the cluster")
			}
		}
	}
}

// quotaOf is the quota m's database is held to: its own, else the configured one, else
// etcd's default.
func quotaOf(d Desired, m Member) int64 {
	switch {
	case m.DBQuota > 0:
		return m.DBQuota
	case d.Maintenance.QuotaBackendBytes > 0:
		return d.Maintenance.QuotaBackendBytes
	}
	return 2 << 30
}

// randomSpace gives a state alarms, database sizes around the quota and the threshold,
// a recorded run and a due schedule, each at random, so the invariants of checkMaintenance
// meet NOSPACE at every stage of its remediation.
func randomSpace(r *rand.Rand, d *Desired, o *Observed) {
	if r.Intn(2) == 0 { // half the states without maintenance: rules after it (17) must be reached too
		return
	}
	s := &o.Space
	s.AlarmsKnown = r.Intn(8) != 0
	ids := []uint64{0, 99} // 0: etcd's whole-cluster CORRUPT (and a NOSPACE of no member)
	for _, m := range o.Members {
		ids = append(ids, m.ID)
	}
	for range r.Intn(3) {
		s.Alarms = append(s.Alarms, Alarm{MemberID: pick(r, ids...), Type: pick(r, AlarmNoSpace, AlarmCorrupt)})
	}
	quota := pick(r, int64(0), 100*mib)
	d.Maintenance.QuotaBackendBytes = pick(r, int64(0), 100*mib)
	d.Maintenance.DefragThresholdPercent = pick(r, 0, 150)
	for i := range o.Members {
		m := &o.Members[i]
		m.DBQuota = quota
		m.DBSize = pick(r, 5*mib, 89*mib, 91*mib, 3<<30)
		m.DBSizeInUse = m.DBSize / pick(r, int64(1), 2, 4)
	}
	if r.Intn(2) == 0 {
		run := &MaintenanceRun{Trigger: pick(r, TriggerSchedule, TriggerThreshold, TriggerNoSpace), Revision: pick(r, int64(0), 4000, 5000)}
		for _, id := range ids {
			if r.Intn(2) == 0 {
				run.Done = append(run.Done, id)
			}
		}
		s.Run = run
	}
	s.ScheduleDue = r.Intn(3) == 0
	if r.Intn(2) == 0 {
		s.LastFinished = o.Now.Add(-time.Duration(r.Intn(20)) * time.Minute)
	}
}
