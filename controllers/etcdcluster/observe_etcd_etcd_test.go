//go:build integration

package etcdcluster

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
)

// The questions asked at once come back whole: a status per endpoint (a dead one's
// failed), the member list, the own list of the member that answered and not of the
// one that did not, the alarm list, and the sizes.
func TestAskEtcdOnRealEtcd(t *testing.T) {
	ec := etcdtest.StartCluster(t, 1, etcdtest.DefaultVersion)
	served, dead := ec.Endpoints()[0], "http://127.0.0.1:1"
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: []string{served}})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ans := askEtcd(ctx, admin, []string{served, dead}, nil)
	if len(ans.statuses) != 2 || ans.statuses[0].Err != nil || ans.statuses[1].Err == nil {
		t.Fatalf("statuses %+v: want the served one answered and the dead one failed", ans.statuses)
	}
	if len(ans.members) != 1 {
		t.Fatalf("members %+v, want the one member", ans.members)
	}
	if len(ans.lists) != 1 || ans.lists[0].From != ans.members[0].ID || len(ans.lists[0].Members) != 1 {
		t.Fatalf("own lists %+v, want only the answering member's", ans.lists)
	}
	if !ans.space.alarmsKnown || len(ans.space.alarms) != 0 || !ans.space.sizesKnown || ans.space.dbSize == 0 {
		t.Fatalf("space %+v, want the alarm list known (none) and the member's sizes", ans.space)
	}

	// An alarm raised shows in the statuses, and the alarm list is then read.
	raw := pb.NewMaintenanceClient(admin.Client().ActiveConnection())
	if _, err := raw.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: ans.members[0].ID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}
	ans = askEtcd(ctx, admin, []string{served}, nil)
	want := etcdadmin.Alarm{MemberID: ans.members[0].ID, Type: etcdadmin.AlarmNoSpace}
	if !ans.space.alarmsKnown || len(ans.space.alarms) != 1 || ans.space.alarms[0] != want {
		t.Fatalf("space %+v after NOSPACE was raised, want the alarm %+v", ans.space, want)
	}

	// status.members asks only for statuses and the member list.
	members := askMembers(ctx, admin, []string{served}, nil)
	if len(members.members) != 1 || members.lists != nil || members.space.alarmsKnown || members.space.sizesKnown {
		t.Fatalf("askMembers: %+v, want the member list only", members)
	}
}
