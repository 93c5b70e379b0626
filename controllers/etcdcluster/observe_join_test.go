package etcdcluster

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// joinFixture is three member pods and what their members answered: c-a (the leader)
// and c-b answer at their endpoints, c-c has none (its node is down) and names its
// member only by annotation; member 4 is a learner added but never started.
func joinFixture() (*observation, etcdAnswers, map[string]string) {
	pod := func(name string, ready bool, node, memberID string) *corev1.Pod {
		p := ownedMemberPod(name, "uid-c")
		p.Spec.NodeName = node
		p.Annotations = map[string]string{render.AnnotationVersion: "v3.7.3"}
		if memberID != "" {
			p.Annotations[render.AnnotationMemberID] = memberID
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	o := &observation{pods: map[string]*corev1.Pod{
		"c-c": pod("c-c", false, "n-down", etcdadmin.FormatID(3)),
		"c-a": pod("c-a", true, "n-up", ""),
		"c-b": pod("c-b", true, "", etcdadmin.FormatID(0xbb)), // the status answer wins
	}}
	epOfPod := map[string]string{"c-a": "http://10.0.0.1:2379", "c-b": "http://10.0.0.2:2379"}
	ans := etcdAnswers{
		statuses: []etcdadmin.EndpointStatus{
			{Endpoint: "http://10.0.0.2:2379", MemberID: 2, ClusterID: 77, RaftIndex: 9, Revision: 4, Version: "3.7.3"}, // knows no leader
			{Endpoint: "http://10.0.0.9:2379", Err: errors.New("deadline exceeded")},
			{Endpoint: "http://10.0.0.1:2379", MemberID: 1, Leader: 1, ClusterID: 77, RaftIndex: 10, Revision: 5, Version: "3.7.3"},
		},
		members: []etcdadmin.Member{
			{ID: 1, Name: "c-a", PeerURLs: []string{"http://c-a.c.ns.svc:2380"}},
			{ID: 2, Name: "c-b", PeerURLs: []string{"http://c-b.c.ns.svc:2380"}},
			{ID: 3, Name: "c-c", PeerURLs: []string{"http://c-c.c.ns.svc:2380"}},
			{ID: 4, PeerURLs: []string{"http://c-d.c.ns.svc:2380"}, IsLearner: true},
		},
		lists: []planner.MemberList{{From: 1, Members: []planner.Member{{ID: 1, Name: "c-a"}}}},
	}
	return o, ans, epOfPod
}

func testJoiner(now time.Time, nodeReads *[]string) joiner {
	return joiner{health: newHealthTracker(), key: "ns/c", now: now, nodeReady: func(node string) bool {
		*nodeReads = append(*nodeReads, node)
		return node != "n-down"
	}}
}

// The join names the leader and the cluster, gives each member what it said of itself,
// each pod the member that answered from it (else the one its annotation names), adopts
// a learner whose pending record was lost, and passes the member lists on.
func TestJoinPodsAndMembers(t *testing.T) {
	o, ans, epOfPod := joinFixture()
	var nodeReads []string
	testJoiner(proofNow, &nodeReads).join(o, ans, epOfPod)
	p := o.planner

	if p.LeaderID != 1 || o.leaderEP != "http://10.0.0.1:2379" || o.clusterID != 77 {
		t.Errorf("leader %d at %q, cluster %d; want member 1 at its endpoint, cluster 77", p.LeaderID, o.leaderEP, o.clusterID)
	}
	if !p.MembersKnown || !p.Bootstrapped || !reflect.DeepEqual(o.members, ans.members) || !reflect.DeepEqual(p.MemberLists, ans.lists) {
		t.Errorf("members known %v, bootstrapped %v, lists %v", p.MembersKnown, p.Bootstrapped, p.MemberLists)
	}
	wantMembers := []planner.Member{
		{ID: 1, Name: "c-a", PeerURLs: ans.members[0].PeerURLs, Reachable: true, RaftIndex: 10, Revision: 5, Version: "3.7.3"},
		{ID: 2, Name: "c-b", PeerURLs: ans.members[1].PeerURLs, Reachable: true, RaftIndex: 9, Revision: 4, Version: "3.7.3", LeaderUnknown: true},
		{ID: 3, Name: "c-c", PeerURLs: ans.members[2].PeerURLs, UnhealthySince: proofNow},
		{ID: 4, Name: "c-d", PeerURLs: ans.members[3].PeerURLs, IsLearner: true, UnhealthySince: proofNow},
	}
	if !reflect.DeepEqual(p.Members, wantMembers) {
		t.Errorf("members\n%+v\nwant\n%+v", p.Members, wantMembers)
	}
	if want := (&planner.PendingMember{Name: "c-d", ID: 4, AddedAt: proofNow}); !reflect.DeepEqual(p.Pending, want) {
		t.Errorf("pending %+v, want the unstarted learner adopted: %+v", p.Pending, want)
	}

	var names []string
	for _, pp := range p.Pods {
		names = append(names, pp.Name)
	}
	if !reflect.DeepEqual(names, []string{"c-a", "c-b", "c-c"}) {
		t.Fatalf("pods %v, want sorted by name", names)
	}
	a, b, c := p.Pods[0], p.Pods[1], p.Pods[2]
	if a.MemberID != 1 || b.MemberID != 2 || c.MemberID != 3 {
		t.Errorf("pod members %d %d %d, want 1 2 3", a.MemberID, b.MemberID, c.MemberID)
	}
	if !a.Ready || a.NodeNotReady || !a.UnhealthySince.IsZero() || a.Version != "3.7.3" || a.Image != "quay.io/coreos/etcd:v3.7.3" {
		t.Errorf("pod c-a %+v", a)
	}
	if c.Ready || !c.NodeNotReady || !c.UnhealthySince.Equal(proofNow) {
		t.Errorf("pod c-c %+v, want not ready on a node not ready, unhealthy since now", c)
	}
	if !reflect.DeepEqual(nodeReads, []string{"n-up", "n-down"}) && !reflect.DeepEqual(nodeReads, []string{"n-down", "n-up"}) {
		t.Errorf("nodes read %v, want each pod's node, none for a pod not scheduled", nodeReads)
	}
}

// A pending learner already recorded is not replaced by another unstarted one.
func TestJoinKeepsTheRecordedPending(t *testing.T) {
	o, ans, epOfPod := joinFixture()
	recorded := &planner.PendingMember{Name: "c-e", ID: 5, AddedAt: proofNow.Add(-time.Minute)}
	o.planner.Pending = recorded
	var nodeReads []string
	testJoiner(proofNow, &nodeReads).join(o, ans, epOfPod)
	if o.planner.Pending != recorded {
		t.Errorf("pending %+v, want the recorded one", o.planner.Pending)
	}
}

// Without a member list the members are unknown and the recorded bootstrap state
// stands; the pods are still joined. A member or pod unhealthy across joins keeps the
// time it was first seen so; one no longer observed is forgotten.
func TestJoinAcrossObservations(t *testing.T) {
	var nodeReads []string
	j := testJoiner(proofNow, &nodeReads)
	o, ans, epOfPod := joinFixture()
	j.join(o, ans, epOfPod)

	later := proofNow.Add(time.Minute)
	j.now = later
	o, _, _ = joinFixture()
	j.join(o, etcdAnswers{}, nil)
	if o.planner.MembersKnown || o.planner.Bootstrapped || o.members != nil || o.planner.Members != nil || o.planner.LeaderID != 0 {
		t.Errorf("no member list: %+v", o.planner)
	}
	if len(o.planner.Pods) != 3 || o.planner.Pods[0].MemberID != 0 || o.planner.Pods[2].MemberID != 3 {
		t.Errorf("pods %+v, want members only from annotations", o.planner.Pods)
	}
	if since := o.planner.Pods[2].UnhealthySince; !since.Equal(proofNow) {
		t.Errorf("pod c-c unhealthy since %v, want since it was first seen so (%v)", since, proofNow)
	}

	// Member 3 went unobserved for one join: its grace starts over.
	j.now = later.Add(time.Minute)
	o, ans, epOfPod = joinFixture()
	j.join(o, ans, epOfPod)
	if since := o.planner.Members[2].UnhealthySince; !since.Equal(j.now) {
		t.Errorf("member 3 unhealthy since %v, want %v (forgotten while unobserved)", since, j.now)
	}
}

func TestMemberNameFromPeerURLs(t *testing.T) {
	for _, tc := range []struct {
		urls []string
		want string
	}{
		{[]string{"https://c-a.c.ns.svc.cluster.local:2380"}, "c-a"},
		{[]string{"http://10.0.0.1:2380", "http://c-b.c.ns.svc:2380"}, "c-b"},
		{[]string{"http://[fd00::1]:2380"}, ""},
		{[]string{"::not a url"}, ""},
		{nil, ""},
	} {
		if got := memberNameFromPeerURLs(tc.urls); got != tc.want {
			t.Errorf("memberNameFromPeerURLs(%v) = %q, want %q", tc.urls, got, tc.want)
		}
	}
	if got := memberName(etcdadmin.Member{Name: "c-x", PeerURLs: []string{"http://c-y.c.ns.svc:2380"}}); got != "c-x" {
		t.Errorf("memberName of a started member = %q, want its own name", got)
	}
}
