package planner

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Space management: defragmentation on a schedule or past a threshold, NOSPACE
// remediation (the maintenance rule, planMaintenance) and the replacement of a member etcd found
// CORRUPT (the corrupt rule, planCorrupt).

// Alarm types, as etcd's AlarmList names them.
const (
	AlarmNoSpace = "NOSPACE"
	AlarmCorrupt = "CORRUPT"
)

// Maintenance run triggers: why a run started.
const (
	TriggerSchedule  = "Schedule"
	TriggerThreshold = "Threshold"
	TriggerNoSpace   = "NoSpace"
)

const (
	// NoSpaceMarginPercent is the headroom below the quota every member's database must
	// have before NOSPACE is disarmed: 10%. Disarmed at 99% of its quota a cluster goes
	// read-only again after a few writes, and the second alarm is worse than the first
	// (clients saw success, then failure again); 10% is a day's growth for most
	// clusters, yet reachable whenever the live data is below 90% of the quota. If it is
	// not, the data is too big for the quota and the user has to decide.
	NoSpaceMarginPercent = 10
	// MinDefragFreeBytes is the least a threshold-triggered defragmentation must free on a
	// member: defragmenting blocks that member's reads and writes while it runs, which is
	// not worth less than a mebibyte, and a tiny database is always "fragmented" by a
	// ratio.
	MinDefragFreeBytes int64 = 1 << 20
	// ThresholdCooldown is the least time between the end of one defragmentation run and
	// the start of a threshold-triggered one, so a database that a defragmentation cannot
	// bring under the threshold is not defragmented in a loop.
	ThresholdCooldown = 10 * time.Minute
)

// MaintenanceSpec is the cluster's maintenance settings.
type MaintenanceSpec struct {
	// DefragThresholdPercent: defragment a member whose database is larger than this
	// percentage of its in-use size (> 100); 0: never by threshold.
	DefragThresholdPercent int
	// QuotaBackendBytes is the configured quota, used for a member that reports none
	// (etcd < 3.6); 0: etcd's default.
	QuotaBackendBytes int64
}

// SpaceObserved is what the controller knows of the space and the alarms.
type SpaceObserved struct {
	// AlarmsKnown: the alarm list was read; Alarms is then complete.
	AlarmsKnown bool
	Alarms      []Alarm
	// Run is the maintenance run recorded in status; nil when none is in progress.
	Run *MaintenanceRun
	// ScheduleDue: a slot of the defragmentation schedule has passed since the last
	// scheduled run (the controller reads the schedule and the recorded slot).
	ScheduleDue bool
	// LastFinished is when the last defragmentation run ended (zero: never).
	LastFinished time.Time
}

// Alarm is one alarm raised on one member.
type Alarm struct {
	MemberID uint64
	Type     string
}

// MaintenanceRun is a run in progress, as recorded in status.
type MaintenanceRun struct {
	Trigger   string
	StartedAt time.Time
	// Revision: NOSPACE only, the revision the history was compacted at (0: not yet).
	Revision int64
	// Done are the members defragmented in this run (in the current round).
	Done []uint64
}

// planMaintenance is the maintenance rule, reached only when the upgrade rule found nothing to do: every member
// healthy on the desired version, at full size, nothing in flight.
//   - NOSPACE raised → compact at the current revision, defragment every voter whose
//     database etcd reports over the disarm line (followers first, by name; the leader
//     last after MoveLeader), then disarm only once every member's database is at least
//     NoSpaceMarginPercent below its quota. If it is not after all of them were
//     defragmented, Wait(NoSpaceDataTooLarge): the alarm stays; a later deletion (the
//     revision moves past the compaction) starts a new round.
//   - a recorded run continues: the next member not yet done (for a threshold run, one
//     still past the threshold) → Defragment, else FinishMaintenance.
//   - a schedule slot due → a scheduled run over every voter; a member past the
//     threshold (and at least MinDefragFreeBytes to free, ThresholdCooldown after the
//     last run) → a threshold run over the members past it.
//
// Between two members every member must answer and follow a leader (the health gate of
// an upgrade, without pod readiness: a defragmentation restarts nothing, and etcd's
// readiness fails on any alarm).
func (v *view) planMaintenance() (Action, bool) {
	s := v.o.Space
	if !s.AlarmsKnown {
		return Action{}, false
	}
	if len(alarmed(s.Alarms, AlarmNoSpace)) > 0 {
		return v.planNoSpace(), true
	}
	run := s.Run
	if run != nil && run.Trigger == TriggerNoSpace {
		// The alarm is gone (disarmed, and the status write after it lost): the run is over.
		return Action{Kind: FinishMaintenance, Trigger: run.Trigger, Reason: v1beta2.ReasonAlarmDisarmed,
			Message: "NOSPACE is no longer raised; the remediation is over"}, true
	}
	if run != nil {
		return v.continueDefrag(run), true
	}
	if s.ScheduleDue {
		return v.defragNext(&MaintenanceRun{Trigger: TriggerSchedule}, v.voters), true
	}
	if past := v.pastThreshold(nil); len(past) > 0 && !v.o.Now.Before(s.LastFinished.Add(ThresholdCooldown)) {
		return v.defragNext(&MaintenanceRun{Trigger: TriggerThreshold}, past), true
	}
	return Action{}, false
}

// continueDefrag takes a scheduled or threshold run to its next member, or ends it.
func (v *view) continueDefrag(run *MaintenanceRun) Action {
	todo := v.voters
	if run.Trigger == TriggerThreshold {
		todo = v.pastThreshold(run.Done)
	}
	return v.defragNext(run, todo)
}

// defragNext defragments the next member of todo that the run has not done: followers
// by name, the leader last after moving leadership; FinishMaintenance when none is left.
func (v *view) defragNext(run *MaintenanceRun, todo []*Member) Action {
	reason := v1beta2.ReasonDefragmenting
	if run.Trigger == TriggerNoSpace {
		reason = v1beta2.ReasonNoSpaceRemediating
	}
	next := v.nextToDefrag(run, todo)
	if next == nil {
		return Action{Kind: FinishMaintenance, Trigger: run.Trigger, Reason: v1beta2.ReasonDefragmentationFinished,
			Message: fmt.Sprintf("%s defragmentation finished on %d members", strings.ToLower(run.Trigger), len(run.Done))}
	}
	if a, waiting := v.maintenanceGate(); waiting {
		return a
	}
	if next == v.leader && len(v.voters) > 1 {
		to := v.leaderTarget(next, nil, nil)
		if to == nil {
			return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before defragmenting the leader", requeueShort)
		}
		return Action{Kind: MoveLeader, From: next.ID, To: to.ID, Trigger: run.Trigger, Reason: reason,
			Message: fmt.Sprintf("moving leadership from %s to %s before defragmenting %s", next.Name, to.Name, next.Name)}
	}
	return Action{Kind: Defragment, ID: next.ID, Name: next.Name, Trigger: run.Trigger, Reason: reason,
		Message: fmt.Sprintf("defragmenting %s (database %d bytes, %d in use)", next.Name, next.DBSize, next.DBSizeInUse)}
}

// nextToDefrag is the first member of todo the run has not done, followers before the
// leader, by name.
func (v *view) nextToDefrag(run *MaintenanceRun, todo []*Member) *Member {
	cands := make([]*Member, 0, len(todo))
	for _, m := range todo {
		if !slices.Contains(run.Done, m.ID) {
			cands = append(cands, m)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if li, lj := cands[i] == v.leader, cands[j] == v.leader; li != lj {
			return lj
		}
		return cands[i].Name < cands[j].Name
	})
	if len(cands) == 0 {
		return nil
	}
	return cands[0]
}

// maintenanceGate waits until every member answers, has started and follows a leader:
// the member defragmented last is back before the next one is blocked.
func (v *view) maintenanceGate() (Action, bool) {
	for _, m := range v.members {
		if !v.alive(m) || m.LeaderUnknown {
			return wait(v1beta2.ReasonMaintenanceInProgress, fmt.Sprintf("waiting for %s to answer and follow the leader before the next defragmentation", m.Name), requeueShort), true
		}
	}
	return Action{}, false
}

// pastThreshold lists the voters not in done whose database is larger than the
// threshold percentage of its in-use size, with at least MinDefragFreeBytes to free.
func (v *view) pastThreshold(done []uint64) []*Member {
	pct := int64(v.d.Maintenance.DefragThresholdPercent)
	if pct <= 100 {
		return nil
	}
	var out []*Member
	for _, m := range v.voters {
		if slices.Contains(done, m.ID) || m.DBSizeInUse <= 0 {
			continue
		}
		if m.DBSize*100 > pct*m.DBSizeInUse && m.DBSize-m.DBSizeInUse >= MinDefragFreeBytes {
			out = append(out, m)
		}
	}
	return out
}

// planNoSpace remediates a raised NOSPACE: compact, defragment every voter over the
// disarm line (overLine), verify, disarm.
func (v *view) planNoSpace() Action {
	run := v.o.Space.Run
	rev := v.maxRevision()
	compact := Action{Kind: Compact, Revision: rev, Trigger: TriggerNoSpace, Reason: v1beta2.ReasonNoSpaceRemediating,
		Message: fmt.Sprintf("NOSPACE raised: compacting the history at revision %d before defragmenting each member over %d%% of its quota", rev, 100-NoSpaceMarginPercent)}
	if run == nil || run.Trigger != TriggerNoSpace || run.Revision == 0 {
		return compact
	}
	if todo := v.overLine(); v.nextToDefrag(run, todo) != nil {
		return v.defragNext(run, todo)
	}
	over := v.overQuota()
	if len(over) == 0 {
		return Action{Kind: DisarmAlarm, Alarm: AlarmNoSpace, Trigger: TriggerNoSpace, Reason: v1beta2.ReasonNoSpaceRemediating,
			Message: fmt.Sprintf("every member's database is at least %d%% below its quota after compaction and defragmentation; disarming NOSPACE", NoSpaceMarginPercent)}
	}
	if rev > run.Revision {
		// Keys were deleted (or written) since the compaction: a new round may free more.
		compact.Message = fmt.Sprintf("the data changed since the compaction at revision %d: compacting again at %d", run.Revision, rev)
		return compact
	}
	return wait(v1beta2.ReasonNoSpaceDataTooLarge, fmt.Sprintf(
		"NOSPACE stays raised: after compaction and defragmentation of every member %s; the data itself is too big for the quota. "+
			"Raise the quota (v1 spec.etcd.quotaBackendBytes, v1beta2 annotation %s) or delete keys (deletes are served while NOSPACE is raised); "+
			"the operator compacts and defragments again once the data changes",
		strings.Join(over, ", "), v1beta2.QuotaBackendBytesAnnotation), requeueLong)
}

// overLine lists the voters a NOSPACE round still has to defragment: those whose
// database, as etcd reported it in this observation, is not at least
// NoSpaceMarginPercent below the quota. The recorded run alone cannot say that a member
// was done: the record comes from status, which may lag the reconcile that wrote it, and a
// member defragmented again from a stale record blocks its reads and writes for nothing.
// The size etcd reports is fresh proof either way: a defragmentation that brought the
// member under the line removes it here, whatever status still says. A member already
// under the line needs nothing for the disarm: etcd checks its quota against the file's
// size, and the pages the compaction freed inside the file are reused by new writes.
func (v *view) overLine() []*Member {
	var out []*Member
	for _, m := range v.voters {
		if _, over := v.overDisarmLine(m); over {
			out = append(out, m)
		}
	}
	return out
}

// overQuota describes the members whose database is not at least NoSpaceMarginPercent
// below their quota.
func (v *view) overQuota() []string {
	var out []string
	for _, m := range v.members {
		if q, over := v.overDisarmLine(m); over {
			out = append(out, fmt.Sprintf("%s holds %d of its %d bytes", m.Name, m.DBSize, q))
		}
	}
	return out
}

// overDisarmLine reports m's quota (its own, else the configured one, else etcd's
// default) and whether its database is not at least NoSpaceMarginPercent below it.
func (v *view) overDisarmLine(m *Member) (quota int64, over bool) {
	q := m.DBQuota
	if q <= 0 {
		q = v.d.Maintenance.QuotaBackendBytes
	}
	if q <= 0 {
		q = v1beta2.DefaultQuotaBackendBytes
	}
	return q, m.DBSize*100 > q*(100-NoSpaceMarginPercent)
}

// maxRevision is the highest revision a member reported.
func (v *view) maxRevision() int64 {
	var rev int64
	for _, m := range v.members {
		rev = max(rev, m.Revision)
	}
	return rev
}

// planCorrupt is the corrupt rule: etcd's CORRUPT alarm names members whose data differs from
// their peers'. While it is raised the cluster takes no writes.
//   - a named member still in the cluster is replaced (RemoveMember; the scale-up rule adds a new
//     learner that syncs from the leader), one at a time, only while the named members
//     are a minority of the voters (the others hold the healthy copy), the alive voters
//     not named keep a quorum of the voters left, and it is not the last voter; a named
//     leader first hands leadership to a voter not named.
//     Nothing while the cluster is below its size: the last replacement is added first.
//   - the named members are all gone → DisarmAlarm for each (their copy left with them).
func (v *view) planCorrupt() (Action, bool) {
	s := v.o.Space
	if !s.AlarmsKnown {
		return Action{}, false
	}
	ids := alarmed(s.Alarms, AlarmCorrupt)
	if len(ids) == 0 {
		return Action{}, false
	}
	if slices.Contains(ids, 0) {
		// etcd names member 0 when no quorum of hashes agrees: it cannot tell which copy
		// diverged, so no member can be replaced from "its healthy peers", and disarming
		// would let writes continue on inconsistent data. A human decides.
		return wait(v1beta2.ReasonCorruptMemberNotReplaceable, "CORRUPT is raised for the whole cluster (etcd could not tell which member diverged): "+
			"writes stay stopped; compare the members' hashes (etcdctl endpoint hashkv) and restore from a backup", requeueLong), true
	}
	var named []*Member
	for _, id := range ids {
		if m := v.byID[id]; m != nil {
			named = append(named, m)
		}
	}
	if len(v.voters) < v.d.Size {
		// A replacement is still to be added (the scale-up rule): never two at a time.
		return Action{}, false
	}
	if len(named) == 0 {
		return Action{Kind: DisarmAlarm, Alarm: AlarmCorrupt, ID: ids[0], Reason: v1beta2.ReasonReplacingCorruptMember,
			Message: fmt.Sprintf("the member %x that CORRUPT names is no longer in the cluster; disarming its alarm", ids[0])}, true
	}
	m := named[0]
	refuse := func(why string) (Action, bool) {
		return wait(v1beta2.ReasonCorruptMemberNotReplaceable, fmt.Sprintf("CORRUPT raised on %s but it cannot be replaced safely: %s", m.Name, why), requeueLong), true
	}
	if len(v.voters) < 2 {
		return refuse("it is the only voter, the last copy of the data; restore from a backup")
	}
	if 2*len(named) >= len(v.voters) {
		return refuse(fmt.Sprintf("%d of %d voters are named, so no majority holds a healthy copy", len(named), len(v.voters)))
	}
	healthyAlive := 0
	for _, vm := range v.voters {
		if v.alive(vm) && !slices.Contains(ids, vm.ID) {
			healthyAlive++
		}
	}
	if healthyAlive < Quorum(len(v.voters)-1) {
		return refuse(fmt.Sprintf("only %d alive voters are not named; removing it needs %d", healthyAlive, Quorum(len(v.voters)-1)))
	}
	if m == v.leader {
		avoid := map[uint64]bool{}
		for _, id := range ids {
			avoid[id] = true
		}
		to := v.leaderTarget(m, nil, avoid)
		if to == nil || avoid[to.ID] {
			return refuse("no healthy alive voter to hand leadership to")
		}
		return Action{Kind: MoveLeader, From: m.ID, To: to.ID, Reason: v1beta2.ReasonReplacingCorruptMember,
			Message: fmt.Sprintf("moving leadership from %s, which CORRUPT names, to %s before replacing it", m.Name, to.Name)}, true
	}
	return Action{Kind: ReplaceMember, ID: m.ID, Name: m.Name, DeletePod: v.podOf[m.ID] != nil, Reason: v1beta2.ReasonReplacingCorruptMember,
		Message: fmt.Sprintf("CORRUPT raised on %s (%x): removing it so a new member syncs from the healthy ones", m.Name, m.ID)}, true
}

// alarmed lists, sorted, the members with an alarm of type typ.
func alarmed(alarms []Alarm, typ string) []uint64 {
	var out []uint64
	for _, a := range alarms {
		if a.Type == typ {
			out = append(out, a.MemberID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// maintenanceString is the detail of a maintenance action for Action.String.
func maintenanceString(a Action) string {
	switch a.Kind {
	case Defragment:
		return fmt.Sprintf("{%s %x %s}", a.Name, a.ID, a.Trigger)
	case Compact:
		return fmt.Sprintf("{rev %d %s}", a.Revision, a.Trigger)
	case DisarmAlarm:
		return fmt.Sprintf("{%s %x}", a.Alarm, a.ID)
	}
	return "{" + a.Trigger + "}"
}
