package etcdadmin

import (
	"cmp"
	"context"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Alarm types etcd raises, as AlarmList names them.
const (
	// AlarmNoSpace: a member's backend reached its quota (quota-backend-bytes). The whole
	// cluster then refuses writes (only reads and deletes are served) until space is
	// freed (compact, defragment) and the alarm is disarmed.
	AlarmNoSpace = "NOSPACE"
	// AlarmCorrupt: the corruption check found a member whose data differs from its
	// peers'. The cluster refuses writes until the member is replaced and the alarm
	// disarmed.
	AlarmCorrupt = "CORRUPT"
)

// Alarm is one alarm raised on one member.
type Alarm struct {
	MemberID uint64
	Type     string // AlarmNoSpace, AlarmCorrupt, or what a newer etcd names
}

// MayReportAlarm says whether a member's status answer carries anything besides "no
// leader" in its errors: etcd lists there every alarm the member has applied (as text
// whose format is the API's string form of an alarm, not a contract, so it is not
// parsed). A status that answered with nothing there is a member that knows of no alarm;
// one that may report an alarm is a reason to ask the cluster's list (Alarms), a raft
// proposal each time, which the status probe is not.
func (s EndpointStatus) MayReportAlarm() bool {
	if s.Err != nil {
		return false
	}
	for _, e := range s.Errors {
		if e != rpctypes.ErrNoLeader.Error() {
			return true
		}
	}
	return false
}

// Alarms lists the cluster's active alarms, sorted by type then member. The list is
// the cluster's (etcd keeps it in its replicated state), so it needs a quorum: without
// one it fails after the retry budget, like a linearizable member list.
func (a *Admin) Alarms(ctx context.Context) ([]Alarm, error) {
	return retry(ctx, a, "AlarmList", "", a.cfg.CallTimeout, func(ctx context.Context) ([]Alarm, error) {
		r, err := a.client.AlarmList(ctx)
		if err != nil {
			return nil, err
		}
		return alarmsOf(r.Alarms), nil
	})
}

// alarmsOf converts etcd's alarm list, leaving out the placeholder type NONE.
func alarmsOf(in []*pb.AlarmMember) []Alarm {
	out := make([]Alarm, 0, len(in))
	for _, m := range in {
		if m == nil || m.Alarm == pb.AlarmType_NONE {
			continue
		}
		out = append(out, Alarm{MemberID: m.MemberID, Type: m.Alarm.String()})
	}
	slices.SortFunc(out, func(x, y Alarm) int {
		return cmp.Or(cmp.Compare(x.Type, y.Type), cmp.Compare(x.MemberID, y.MemberID))
	})
	return out
}
