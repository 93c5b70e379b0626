package etcdcluster

import (
	"errors"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

func TestReportMembers(t *testing.T) {
	members := []etcdadmin.Member{
		{ID: 0xa, Name: "c-b"},
		{ID: 0xb, Name: "c-a"},
		{ID: 0xc, PeerURLs: []string{"http://c-c.c.default.svc:2380"}, IsLearner: true}, // not started: no name yet
	}
	statuses := []etcdadmin.EndpointStatus{
		{Endpoint: "http://1", MemberID: 0xa, Leader: 0xb, Version: "3.6.16", DBSize: 5<<20 + 12345, DBSizeInUse: 3<<20 + 1},
		{Endpoint: "http://2", MemberID: 0xb, Leader: 0xb, Version: "3.6.16", DBSize: 40 << 10, DBSizeInUse: 20<<10 + 512},
		{Endpoint: "http://3", Err: errors.New("deadline exceeded")},
	}
	var st etcdv1beta2.MembersStatus
	reportMembers(&st, members, statuses)
	if st.Leader != "c-a" {
		t.Errorf("leader %q, want c-a", st.Leader)
	}
	want := []struct {
		name, id, version, size, inUse string
		role                           etcdv1beta2.MemberRole
		healthy                        bool
	}{
		{"c-a", "b", "3.6.16", "40Ki", "20Ki", etcdv1beta2.MemberRoleLeader, true},
		{"c-b", "a", "3.6.16", "5Mi", "3Mi", etcdv1beta2.MemberRoleFollower, true},
		{"c-c", "c", "", "", "", etcdv1beta2.MemberRoleLearner, false},
	}
	if len(st.Details) != len(want) {
		t.Fatalf("%d details, want %d: %+v", len(st.Details), len(want), st.Details)
	}
	for i, w := range want {
		d := st.Details[i]
		size, inUse := "", ""
		if d.DBSize != nil {
			size, inUse = d.DBSize.String(), d.DBSizeInUse.String()
		}
		if d.Name != w.name || d.ID != etcdadmin.FormatID(mustParseHex(t, w.id)) || d.Version != w.version || size != w.size || inUse != w.inUse || d.Role != w.role || d.Healthy != w.healthy {
			t.Errorf("details[%d] = %+v (sizes %q %q), want %+v", i, d, size, inUse, w)
		}
	}

	// The leader's own answer is lost next time: c-b answers, names no leader, and is
	// no longer healthy; c-a keeps the version and sizes last seen.
	statuses = []etcdadmin.EndpointStatus{{Endpoint: "http://1", MemberID: 0xa, Version: "3.6.16", DBSize: 6 << 20, DBSizeInUse: 3 << 20}}
	reportMembers(&st, members, statuses)
	if st.Leader != "" {
		t.Errorf("leader %q with no member naming one", st.Leader)
	}
	if a := st.Details[0]; a.Healthy || a.Version != "3.6.16" || a.DBSize.String() != "40Ki" || a.Role != etcdv1beta2.MemberRoleFollower {
		t.Errorf("c-a without an answer: %+v", a)
	}
	if b := st.Details[1]; b.Healthy || b.DBSize.String() != "6Mi" {
		t.Errorf("c-b answering without a leader: %+v", b)
	}

	// No member list at all: the members stay listed, none healthy, no leader.
	reportMembers(&st, []etcdadmin.Member{{ID: 0xa, Name: "c-b"}}, statuses)
	st.Details[0].Healthy = true
	reportMembers(&st, nil, nil)
	if len(st.Details) != 1 || st.Details[0].Healthy || st.Leader != "" {
		t.Errorf("without a member list: leader %q, %+v", st.Leader, st.Details)
	}
}

// A write of a few bytes does not change the reported sizes (no status write, no
// reconcile of its own); growth past the unit does.
func TestRoundedSizeIgnoresSmallChanges(t *testing.T) {
	for _, c := range []struct {
		a, b int64
		same bool
	}{
		{1 << 20, 1<<20 + 4096, true},
		{1 << 20, 2 << 20, false},
		{8192, 8192 + 100, true},
		{8192, 9216, false},
		{0, 1000, true},
	} {
		if got := roundedSize(c.a).Cmp(*roundedSize(c.b)) == 0; got != c.same {
			t.Errorf("roundedSize(%d) vs (%d): same=%v, want %v", c.a, c.b, got, c.same)
		}
	}
}

func mustParseHex(t *testing.T, s string) uint64 {
	t.Helper()
	id, err := etcdadmin.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
