package etcdcluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// What etcd answers when member c-c was restarted with ETCD_FORCE_NEW_CLUSTER: its Status
// names the same cluster, but its own member list holds only itself. The observation
// carries each answer's cluster ID and list; once the disagreement outlasts
// planner.ForkSettle the plan is Wait(Forked), and the Forked condition names c-c with a
// warning; when the members agree again it turns False.
func TestForkObservedAndReported(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"}}
	c.Status.Bootstrapped = true
	names := []string{"c-a", "c-b", "c-c"}
	var pods []corev1.Pod
	epOfPod := map[string]string{}
	var members []etcdadmin.Member
	var statuses []etcdadmin.EndpointStatus
	for i, n := range names {
		p := ownedMemberPod(n, "uid-c")
		p.Status.Phase = corev1.PodRunning
		pods = append(pods, *p)
		ep := "http://10.0.0." + string(rune('1'+i)) + ":2379"
		epOfPod[n] = ep
		id := uint64(i + 1)
		members = append(members, etcdadmin.Member{ID: id, Name: n, PeerURLs: []string{"http://" + n + ":2380"}})
		statuses = append(statuses, etcdadmin.EndpointStatus{Endpoint: ep, ClusterID: 0xc1, MemberID: id, Leader: 1, Revision: 10, Version: "3.7.3"})
	}
	lists := func(forked bool) []planner.MemberList {
		var out []planner.MemberList
		for _, m := range members {
			l := planner.MemberList{From: m.ID, ClusterID: 0xc1}
			for _, o := range members {
				if !forked || m.ID != 3 || o.ID == 3 {
					l.Members = append(l.Members, planner.Member{ID: o.ID, Name: o.Name})
				}
			}
			out = append(out, l)
		}
		return out
	}
	rec := record.NewFakeRecorder(10)
	r := newTestReconciler(t, Reconciler{Recorder: rec, PinKey: testPinKey})
	j := joiner{health: newHealthTracker(), key: "ns/c", nodeReady: func(string) bool { return true }}
	plan := func(at time.Time, forked bool) planner.Action {
		t.Helper()
		j.now = at
		o := &observation{planner: recordedState(c, at), pods: ownPods(c, pods)}
		j.join(o, etcdAnswers{statuses: statuses, members: members, lists: lists(forked)}, epOfPod)
		a := planner.Plan(desiredFromSpec(c, 0), o.planner)
		r.reportFork(c, a, at.Format(timeFormat))
		return a
	}

	if a := plan(proofNow, false); a.Reason == etcdv1beta2.ReasonForked || findCondition(c, etcdv1beta2.ClusterConditionForked) != nil {
		t.Fatalf("agreeing members: %v, conditions %+v", a, c.Status.Conditions)
	}
	if a := plan(proofNow.Add(time.Second), true); a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonMembershipUnsettled {
		t.Fatalf("fork first seen: %v", a)
	}
	a := plan(proofNow.Add(time.Second+planner.ForkSettle), true)
	if a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonForked || !strings.Contains(a.Message, "c-c") {
		t.Fatalf("fork past the settle time: %v", a)
	}
	cond := findCondition(c, etcdv1beta2.ClusterConditionForked)
	if cond == nil || cond.Status != corev1.ConditionTrue || !strings.HasPrefix(cond.Message, "members c-c are not in one cluster") {
		t.Fatalf("Forked condition %+v", cond)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, corev1.EventTypeWarning+" "+etcdv1beta2.ReasonForked) {
			t.Errorf("event %q, want a Forked warning", e)
		}
	default:
		t.Error("no warning event")
	}
	plan(proofNow.Add(time.Minute), false)
	if cond := findCondition(c, etcdv1beta2.ClusterConditionForked); cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonNotForked {
		t.Errorf("after the members agree again: %+v", cond)
	}
}

func TestForkedCondition(t *testing.T) {
	wait := func(reason string) planner.Action {
		return planner.Action{Kind: planner.Wait, Reason: reason, Message: "m"}
	}
	const typ = etcdv1beta2.ClusterConditionForked
	for _, tc := range []struct {
		name string
		a    planner.Action
		had  bool
		want *conditionUpdate // nil: the condition is left as it is
	}{
		{"forked", wait(etcdv1beta2.ReasonForked), false, &conditionUpdate{Type: typ, Status: true, Reason: etcdv1beta2.ReasonForked, Fail: etcdv1beta2.ReasonForked}},
		{"still settling", wait(etcdv1beta2.ReasonMembershipUnsettled), true, nil},
		{"paused", wait(etcdv1beta2.ReasonPaused), true, nil},
		{"agreeing again", planner.Action{Kind: planner.Done}, true, &conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonNotForked, Recovered: true}},
		{"never forked", planner.Action{Kind: planner.Done}, false, nil},
	} {
		u, ok := forkedCondition(tc.a, tc.had)
		if ok != (tc.want != nil) {
			t.Errorf("%s: set %v, want %v", tc.name, ok, tc.want != nil)
		} else if ok {
			wantUpdate(t, tc.name, u, *tc.want)
		}
	}
}
