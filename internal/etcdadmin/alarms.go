package etcdadmin

import (
	"cmp"
	"context"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
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
