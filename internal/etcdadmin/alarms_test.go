package etcdadmin_test

import (
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Alarms lists what etcd raised, per member, and nothing once disarmed. The alarms are
// raised through etcd's own Alarm RPC (what a member does when its backend hits the
// quota, or the corruption check fails), which reaches the same replicated alarm store.
func TestAlarms(t *testing.T) {
	t.Parallel()
	_, a, ctx := threeMembers(t, time.Minute)

	got, err := a.Alarms(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("a fresh cluster: alarms %v, %v", got, err)
	}
	sts := statusOfAll(t, ctx, a) // the members' IDs: every one must answer
	for _, s := range sts {
		// etcd's default quota, 2 GiB, reported by the member itself.
		if s.Err != nil || s.DBSizeQuota != 2<<30 {
			t.Fatalf("status %+v: want the default quota 2 GiB", s)
		}
		if s.MayReportAlarm() {
			t.Fatalf("status %+v of a cluster without alarms may report one", s)
		}
	}
	noSpace, corrupt := sts[0].MemberID, sts[1].MemberID
	raw := pb.NewMaintenanceClient(a.Client().ActiveConnection())
	for _, r := range []*pb.AlarmRequest{
		{Action: pb.AlarmRequest_ACTIVATE, MemberID: corrupt, Alarm: pb.AlarmType_CORRUPT},
		{Action: pb.AlarmRequest_ACTIVATE, MemberID: noSpace, Alarm: pb.AlarmType_NOSPACE},
	} {
		if _, err := raw.Alarm(ctx, r); err != nil {
			t.Fatalf("raise %v: %v", r, err)
		}
	}
	// Every member reports them in its status, the ones raised on others too: the
	// list is replicated state each member applies.
	for _, s := range statusOfAll(t, ctx, a) {
		if !s.MayReportAlarm() {
			t.Fatalf("status %+v of a member after two alarms were raised reports none", s)
		}
	}
	got, err = a.Alarms(ctx)
	want := []etcdadmin.Alarm{{MemberID: corrupt, Type: etcdadmin.AlarmCorrupt}, {MemberID: noSpace, Type: etcdadmin.AlarmNoSpace}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("alarms = %v, %v; want %v", got, err, want)
	}

	// Disarming all (a zero AlarmMember) clears both.
	if _, err := a.Client().AlarmDisarm(ctx, &clientv3.AlarmMember{}); err != nil {
		t.Fatal(err)
	}
	if got, err = a.Alarms(ctx); err != nil || len(got) != 0 {
		t.Fatalf("after disarm: alarms %v, %v", got, err)
	}
	for _, s := range statusOfAll(t, ctx, a) {
		if s.MayReportAlarm() {
			t.Fatalf("status %+v after the alarms were disarmed may report one", s)
		}
	}
}
