package etcdadmin_test

import (
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// Compaction and defragmentation give space back on a real member: one key overwritten
// many times fills the backend with old revisions; after compacting at the current
// revision and defragmenting, the member's database is smaller, by what the result says.
func TestCompactAndDefragmentMember(t *testing.T) {
	t.Parallel()
	_, a, ctx := threeMembers(t, 2*time.Minute)

	val := strings.Repeat("x", 16<<10)
	var rev int64
	for range 400 { // 400 × 16 KiB of history
		r, err := a.Client().Put(ctx, "k", val)
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	sts := statusOfAll(t, ctx, a)
	id := sts[1].MemberID
	// Compact returns once the member that served it has dropped the old revisions;
	// the others apply the compaction from the log and drop them in the background,
	// which on a loaded machine can still be under way when the defragmentation
	// starts. So the member to defragment is the one asked to compact.
	one := newAdmin(t, []string{sts[1].Endpoint})
	if err := one.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if err := one.Compact(ctx, rev); err != nil { // idempotent
		t.Fatalf("compacting again at the same revision: %v", err)
	}
	res, err := a.DefragmentMember(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Before < 4<<20 || res.Freed() < 3<<20 || res.After != res.Before-res.Freed() {
		t.Fatalf("defragmentation of %x: %+v; want a database of at least 4 MiB shrunk by at least 3 MiB", id, res)
	}
	after := a.Status(ctx, res.Endpoint)[0]
	if after.MemberID != id || after.DBSize != res.After {
		t.Fatalf("status after: %+v, want member %x at %d bytes", after, id, res.After)
	}
	// Only that member: another one still holds its pages.
	for _, st := range a.Status(ctx) {
		if st.MemberID != id && st.DBSize < res.Before-(1<<20) {
			t.Fatalf("member %x shrank too (%d bytes): only %x was defragmented", st.MemberID, st.DBSize, id)
		}
	}
	if _, err := a.DefragmentMember(ctx, 0x1234, time.Minute); err == nil {
		t.Fatal("defragmenting an unknown member succeeded")
	}
}

// Disarm lifts only the alarms of the type (and member) asked.
func TestDisarm(t *testing.T) {
	t.Parallel()
	_, a, ctx := threeMembers(t, time.Minute)
	sts := statusOfAll(t, ctx, a) // the members' IDs: every one must answer
	raw := pb.NewMaintenanceClient(a.Client().ActiveConnection())
	for _, r := range []*pb.AlarmRequest{
		{Action: pb.AlarmRequest_ACTIVATE, MemberID: sts[0].MemberID, Alarm: pb.AlarmType_NOSPACE},
		{Action: pb.AlarmRequest_ACTIVATE, MemberID: sts[1].MemberID, Alarm: pb.AlarmType_NOSPACE},
		{Action: pb.AlarmRequest_ACTIVATE, MemberID: sts[1].MemberID, Alarm: pb.AlarmType_CORRUPT},
		{Action: pb.AlarmRequest_ACTIVATE, MemberID: sts[2].MemberID, Alarm: pb.AlarmType_CORRUPT},
	} {
		if _, err := raw.Alarm(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Disarm(ctx, etcdadmin.AlarmNoSpace, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Disarm(ctx, etcdadmin.AlarmCorrupt, sts[2].MemberID); err != nil {
		t.Fatal(err)
	}
	got, err := a.Alarms(ctx)
	want := etcdadmin.Alarm{MemberID: sts[1].MemberID, Type: etcdadmin.AlarmCorrupt}
	if err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("alarms = %v, %v; want only %v", got, err, want)
	}
	if err := a.Disarm(ctx, "BOGUS", 0); err == nil {
		t.Fatal("disarming an unknown alarm type succeeded")
	}
}
