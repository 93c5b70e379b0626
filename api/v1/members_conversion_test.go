package v1

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The per-member list sits beside CoreOS's status.members.ready/unready, which keep
// their v1beta2 JSON shape, and survives v1beta2 → v1 → v1beta2 unchanged.
func TestMemberDetailsRoundTrip(t *testing.T) {
	size := resource.MustParse("12Mi")
	inUse := resource.MustParse("3Mi")
	hub := &v1beta2.EtcdCluster{Status: v1beta2.EtcdClusterStatus{
		Members: v1beta2.MembersStatus{
			Ready: []string{"a", "b"}, Unready: []string{"c"}, Leader: "a",
			Details: []v1beta2.MemberDetail{
				{Name: "a", ID: "8e9e05c52164694d", Role: v1beta2.MemberRoleLeader, Version: "3.6.16", DBSize: &size, DBSizeInUse: &inUse, Healthy: true},
				{Name: "c", ID: "91bc3c398fb3c146", Role: v1beta2.MemberRoleLearner},
			},
		},
		VersionSince: &v1beta2.VersionSince{Minor: "3.6", RaftIndex: 4711},
	}}
	var v1c EtcdCluster
	if err := v1c.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if v1c.Status.Members.Leader != "a" || len(v1c.Status.Members.Details) != 2 || v1c.Status.VersionSince == nil || v1c.Status.VersionSince.RaftIndex != 4711 {
		t.Fatalf("v1 status lost members or versionSince: %+v", v1c.Status)
	}
	var back v1beta2.EtcdCluster
	if err := v1c.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(hub.Status.Members, back.Status.Members) || *back.Status.VersionSince != *hub.Status.VersionSince {
		t.Errorf("round trip changed status:\n got %+v\nwant %+v", back.Status, hub.Status)
	}
	data, err := json.Marshal(back.Status.Members)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ready":["a","b"]`, `"unready":["c"]`, `"leader":"a"`, `"role":"Learner"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("v1beta2 status.members %s lacks %s", data, want)
		}
	}
}
