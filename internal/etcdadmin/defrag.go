package etcdadmin

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Freeing space: compaction drops old revisions (replicated, any member), a
// defragmentation gives the freed pages of one member's backend back (that member
// only), and disarming lifts an alarm once its cause is gone.

// DefragResult is one member's database size before and after a defragmentation.
type DefragResult struct {
	Endpoint      string
	Before, After int64
}

// Freed is what the defragmentation gave back (0 if the database grew meanwhile).
func (r DefragResult) Freed() int64 { return max(0, r.Before-r.After) }

// DefragmentMember defragments the member with the given ID, found among the configured
// endpoints by its status answer. The member blocks its reads and writes while it runs,
// so the request gets timeout (a large database takes a while), not the call timeout,
// and it is not retried once sent: a defragmentation interrupted by the deadline goes
// on in the member and a second one would only queue behind it.
func (a *Admin) DefragmentMember(ctx context.Context, id uint64, timeout time.Duration) (DefragResult, error) {
	before, err := a.statusOfMember(ctx, id)
	if err != nil {
		return DefragResult{}, err
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	_, err = a.client.Defragment(dctx, before.Endpoint)
	a.cfg.Metrics.observe("Defragment", start, err)
	if err != nil {
		kind, _ := classify(ctx, err)
		return DefragResult{}, &Error{Op: "Defragment", Target: FormatID(id), Kind: kind, Err: err, Attempts: 1, Elapsed: time.Since(start)}
	}
	res := DefragResult{Endpoint: before.Endpoint, Before: before.DBSize, After: before.DBSize}
	if after := a.statusOf(ctx, before.Endpoint); after.Err == nil {
		res.After = after.DBSize
	}
	a.log.Info("etcd member defragmented", "member", FormatID(id), "before", res.Before, "after", res.After, "took", time.Since(start).String())
	return res, nil
}

// statusOfMember is the status answer of the configured endpoint that is the member id.
func (a *Admin) statusOfMember(ctx context.Context, id uint64) (EndpointStatus, error) {
	for _, st := range a.Status(ctx) {
		if st.Err == nil && st.MemberID == id {
			return st, nil
		}
	}
	return EndpointStatus{}, &Error{Op: "Status", Target: FormatID(id), Kind: ErrMemberNotFound,
		Err: errors.New("no configured endpoint answered as this member"), Attempts: 1}
}

// Compact compacts the history at rev and waits until the compaction is applied to the
// backend of the member that served it (the others apply it right after). History at
// rev or before it already compacted is success: compacting is idempotent.
func (a *Admin) Compact(ctx context.Context, rev int64) error {
	_, err := retry(ctx, a, "Compact", "", a.cfg.CallTimeout, func(ctx context.Context) (struct{}, error) {
		_, err := a.client.Compact(ctx, rev, clientv3.WithCompactPhysical())
		if errors.Is(err, rpctypes.ErrCompacted) {
			err = nil
		}
		return struct{}{}, err
	})
	if err == nil {
		a.log.Info("etcd history compacted", "revision", rev)
	}
	return err
}

// Disarm lifts the alarms of type typ (AlarmNoSpace, AlarmCorrupt): on member id, or on
// every member when id is 0. An alarm that is not raised needs nothing.
func (a *Admin) Disarm(ctx context.Context, typ string, id uint64) error {
	at, ok := pb.AlarmType_value[typ]
	if !ok || at == int32(pb.AlarmType_NONE) {
		return &Error{Op: "AlarmDisarm", Target: typ, Err: errors.New("unknown alarm type"), Attempts: 1}
	}
	alarms, err := a.Alarms(ctx)
	if err != nil {
		return err
	}
	for _, al := range alarms {
		if al.Type != typ || (id != 0 && al.MemberID != id) {
			continue
		}
		m := &clientv3.AlarmMember{MemberID: al.MemberID, Alarm: pb.AlarmType(at)}
		if _, err := retry(ctx, a, "AlarmDisarm", FormatID(al.MemberID), a.cfg.CallTimeout, func(ctx context.Context) (struct{}, error) {
			_, err := a.client.AlarmDisarm(ctx, m)
			return struct{}{}, err
		}); err != nil {
			return err
		}
		a.log.Info("etcd alarm disarmed", "alarm", typ, "member", FormatID(al.MemberID))
	}
	return nil
}
