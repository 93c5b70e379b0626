//go:build integration

package etcdcluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	admin, ctx := testAdmin(t, etcdadmin.Config{Endpoints: []string{served}})

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

// When no member that answered knows a leader (here the last of three, the others
// stopped), the linearizable list is abandoned as soon as the statuses are in, not
// waited on for its 5 s: the member list comes from the serializable read.
func TestAskEtcdWithoutLeaderOnRealEtcd(t *testing.T) {
	ec := etcdtest.StartCluster(t, 3, etcdtest.DefaultVersion)
	last := ec.Members[2]
	admin, ctx := testAdmin(t, etcdadmin.Config{Endpoints: []string{last.ClientURL}})
	ec.Members[0].Stop(t)
	ec.Members[1].Stop(t)
	// Until the member notices it lost its leader (its election timeout).
	for st := admin.Status(ctx, last.ClientURL)[0]; st.Err != nil || st.Leader != 0; st = admin.Status(ctx, last.ClientURL)[0] {
		if ctx.Err() != nil {
			t.Fatalf("the last member still names a leader: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}

	start := time.Now()
	ans, quorum := askMembersQuorum(ctx, admin, []string{last.ClientURL}, nil, true)
	took := time.Since(start)
	if quorum || len(ans.members) != 3 || len(ans.lists) != 1 || ans.space.alarmsKnown {
		t.Fatalf("quorum %v, members %+v, own lists %d, alarms known %v: want no quorum, the three members from the serializable list, one own list, alarms unknown",
			quorum, ans.members, len(ans.lists), ans.space.alarmsKnown)
	}
	// Not a timing goal: the linearizable list's own bound is 5 s, and reaching it means
	// it was waited for.
	if took >= 5*time.Second {
		t.Fatalf("the observation took %v: the linearizable list was waited for", took)
	}
}

// A member that accepts connections but answers nothing (etcd before it has joined its
// cluster) is not asked for a serializable member list once its status did not answer:
// the one MemberList on the wire is the linearizable one, abandoned.
func TestAskEtcdNoneAnsweringOnRealSocket(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // never accepted: the kernel's backlog holds the connections
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	ep := "http://" + silent.Addr().String()
	reg := prometheus.NewRegistry()
	m, err := etcdadmin.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	admin, ctx := testAdmin(t, etcdadmin.Config{Endpoints: []string{ep}, ProbeTimeout: 300 * time.Millisecond, CallTimeout: 2 * time.Second, Metrics: m})

	ans, quorum := askMembersQuorum(ctx, admin, []string{ep}, nil, true)
	if quorum || ans.members != nil || ans.lists != nil || ans.statuses[0].Err == nil {
		t.Fatalf("quorum %v, members %+v, own lists %+v, statuses %+v: want nothing answered", quorum, ans.members, ans.lists, ans.statuses)
	}
	lists := 0.0
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "etcd_operator_etcd_requests_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "method" && strings.HasSuffix(l.GetValue(), "/MemberList") {
					lists += s.GetCounter().GetValue()
				}
			}
		}
	}
	if lists != 1 {
		t.Fatalf("%v MemberList calls on the wire, want only the linearizable one", lists)
	}
}

// testAdmin is an etcd admin client closed when the test ends, and a context bounding the
// test's calls to it.
func testAdmin(t *testing.T, cfg etcdadmin.Config) (*etcdadmin.Admin, context.Context) {
	t.Helper()
	admin, err := etcdadmin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return admin, ctx
}
