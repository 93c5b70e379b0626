package etcdcluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// OffCordonedNodes: absent until a member is on a cordoned node; False while it moves
// (LeavingCordonedNode) or cannot (NoNodeToLeaveTo, one warning); True once it is gone.
func TestReportCordon(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	r := newTestReconciler(t, Reconciler{Recorder: rec})
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	report := func(noNode bool, leaveNode ...string) []string {
		now = now.Add(time.Minute)
		o := &observation{}
		o.planner.NoNodeToLeaveTo = noNode
		o.planner.Pods = []planner.Pod{{Name: "c-a"}, {Name: "c-b"}}
		for i, n := range leaveNode {
			o.planner.Pods[i].Drift.LeaveNode = n
		}
		r.reportCordon(c, o, now.Format(timeFormat))
		return drain(rec)
	}
	cond := func() *etcdv1beta2.ClusterCondition {
		return findCondition(c, etcdv1beta2.ClusterConditionOffCordonedNodes)
	}

	if evs := report(false); len(evs) != 0 || cond() != nil {
		t.Fatalf("nothing cordoned: events %v, condition %+v", evs, cond())
	}
	if evs := report(false, "n1"); len(evs) != 0 || cond().Status != "False" || cond().Reason != "LeavingCordonedNode" || !strings.Contains(cond().Message, "c-a (node n1)") {
		t.Fatalf("moving: events %v, condition %+v", evs, cond())
	}
	if evs := report(true, "n1"); len(evs) != 1 || !strings.Contains(evs[0], "Warning NoNodeToLeaveTo") || cond().Reason != "NoNodeToLeaveTo" {
		t.Fatalf("stuck: events %v, condition %+v", evs, cond())
	}
	if evs := report(true, "n1"); len(evs) != 0 {
		t.Fatalf("still stuck: repeated events %v", evs)
	}
	if evs := report(false); len(evs) != 1 || !strings.Contains(evs[0], "Normal") || cond().Status != "True" || cond().Reason != "NoMemberOnCordonedNode" {
		t.Fatalf("gone: events %v, condition %+v", evs, cond())
	}
}

func TestCordonCondition(t *testing.T) {
	obs := func(noNode bool, leave ...string) *observation {
		o := &observation{}
		o.planner.NoNodeToLeaveTo = noNode
		for i, n := range leave {
			o.planner.Pods = append(o.planner.Pods, planner.Pod{Name: "c-" + string(rune('a'+i)), Drift: planner.Drift{LeaveNode: n}})
		}
		return o
	}
	const typ = etcdv1beta2.ClusterConditionOffCordonedNodes
	for _, tc := range []struct {
		name string
		o    *observation
		want conditionUpdate
	}{
		{"none on a cordoned node", obs(false), conditionUpdate{Type: typ, Status: true, Reason: etcdv1beta2.ReasonNoMemberOnCordonedNode, Recovered: true}},
		{"leaving", obs(false, "n1"), conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonLeavingCordonedNode}},
		{"stuck", obs(true, "n1", "n2"), conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonNoNodeToLeaveTo, Fail: "NoNodeToLeaveTo:c-a (node n1),c-b (node n2)"}},
	} {
		wantUpdate(t, tc.name, cordonCondition(tc.o), tc.want)
	}
}
