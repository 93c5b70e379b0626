package etcdcluster

import (
	"errors"
	"maps"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

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
	reportMembers(&st, members, statuses, 10)
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
	reportMembers(&st, members, statuses, 10)
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
	reportMembers(&st, []etcdadmin.Member{{ID: 0xa, Name: "c-b"}}, statuses, 10)
	st.Details[0].Healthy = true
	reportMembers(&st, nil, nil, 10)
	if len(st.Details) != 1 || st.Details[0].Healthy || st.Leader != "" {
		t.Errorf("without a member list: leader %q, %+v", st.Leader, st.Details)
	}
}

// What a tenant's etcd answers reaches status bounded: a name that is no DNS label is
// replaced by the member's ID, a version that is no semantic version by "unknown", and
// the list stops at the limit.
func TestReportMembersBoundsAnswers(t *testing.T) {
	long := strings.Repeat("a", 64)
	members := []etcdadmin.Member{
		{ID: 0x1, Name: "c-a"},
		{ID: 0x2, Name: "<script>"},
		{ID: 0x3, Name: long},
		{ID: 0x4, Name: "c-d"},
	}
	statuses := []etcdadmin.EndpointStatus{
		{MemberID: 0x1, Leader: 0x2, Version: "3.6.0-alpha.0"},
		{MemberID: 0x2, Leader: 0x2, Version: strings.Repeat("9", 100)},
		{MemberID: 0x3, Leader: 0x2, Version: "3.6.16 (patched)"},
		{MemberID: 0x4, Leader: 0x2, Version: "v3.7.0+build.5"},
	}
	var st etcdv1beta2.MembersStatus
	reportMembers(&st, members, statuses, 10)
	got := map[string]string{}
	for _, d := range st.Details {
		got[d.Name] = d.Version
	}
	want := map[string]string{"c-a": "3.6.0-alpha.0", etcdadmin.FormatID(2): unknownVersion, etcdadmin.FormatID(3): unknownVersion, "c-d": "v3.7.0+build.5"}
	if !maps.Equal(got, want) {
		t.Errorf("details (name: version) %v, want %v", got, want)
	}
	if st.Leader != etcdadmin.FormatID(2) {
		t.Errorf("leader %q, want the ID of the member with the bad name", st.Leader)
	}

	reportMembers(&st, members, statuses, 2)
	if len(st.Details) != 2 {
		t.Errorf("%d details with a limit of 2", len(st.Details))
	}
	if memberDetailsLimit(3) != 3+memberDetailsMargin || memberDetailsLimit(99) != 99+memberDetailsMargin || memberDetailsLimit(1000) != maxMemberDetails {
		t.Errorf("limits: %d %d %d", memberDetailsLimit(3), memberDetailsLimit(99), memberDetailsLimit(1000))
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

// A reported size stays while the member's size moves within the slack (an idle
// member's pages, a few writes), and follows a move past it, up or down (growth, a
// defragmentation).
func TestReportedSizeKeepsWithinSlack(t *testing.T) {
	q := func(b int64) *resource.Quantity { return resource.NewQuantity(b, resource.BinarySI) }
	for _, c := range []struct {
		name string
		old  *resource.Quantity
		b    int64
		want int64
	}{
		{"first report, rounded to KiB", nil, 20<<10 + 17, 20 << 10},
		{"first report, rounded to MiB", nil, 3<<20 + 5000, 3 << 20},
		{"idle pages up", q(16 << 10), 20 << 10, 16 << 10},
		{"idle pages down", q(20 << 10), 16 << 10, 20 << 10},
		{"small database grows past 64 KiB", q(16 << 10), 96 << 10, 96 << 10},
		{"1 GiB database, 40 MiB more", q(1 << 30), 1<<30 + 40<<20, 1 << 30},
		{"1 GiB database, 80 MiB more", q(1 << 30), 1<<30 + 80<<20 + 123, 1<<30 + 80<<20},
		{"defragmented", q(1 << 30), 100<<20 + 7, 100 << 20},
	} {
		if got := reportedSize(c.old, c.b).Value(); got != c.want {
			t.Errorf("%s: reportedSize(%v, %d) = %d, want %d", c.name, c.old, c.b, got, c.want)
		}
	}
}

// An idle member whose in-use size moves by a page between observations leaves
// status.members unchanged, so the reconcile writes nothing.
func TestReportMembersUnchangedByPageMoves(t *testing.T) {
	members := []etcdadmin.Member{{ID: 1, Name: "a"}}
	status := func(inUse int64) []etcdadmin.EndpointStatus {
		return []etcdadmin.EndpointStatus{{MemberID: 1, Leader: 1, Version: "3.6.16", DBSize: 20 << 10, DBSizeInUse: inUse}}
	}
	var st etcdv1beta2.MembersStatus
	reportMembers(&st, members, status(16<<10), 3)
	before := st.DeepCopy()
	reportMembers(&st, members, status(20<<10), 3)
	if !apiequality.Semantic.DeepEqual(before, &st) {
		t.Errorf("status changed by a page: %+v → %+v", before.Details, st.Details)
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
