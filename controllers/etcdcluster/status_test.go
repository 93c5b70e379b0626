package etcdcluster

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// The one event rule: a failure is announced when it appears or changes, once; its end
// once, and only if it was announced; a failure the caller announced is only remembered;
// states in between say nothing.
func TestSetConditionEventRule(t *testing.T) {
	const typ = etcdv1beta2.ClusterConditionType("Probe")
	fail := func(key string) conditionUpdate {
		return conditionUpdate{Type: typ, Reason: "Broken", Message: "broken: " + key, Fail: key}
	}
	ok := conditionUpdate{Type: typ, Status: true, Reason: "Fine", Message: "fine", Recovered: true}
	between := conditionUpdate{Type: typ, Reason: "Starting", Message: "starting"}
	silent := conditionUpdate{Type: typ, Reason: "Failed", Message: "failed", Fail: "Failed", announcedByCaller: true}
	for _, tc := range []struct {
		name    string
		updates []conditionUpdate
		want    []string // event prefixes, in order
	}{
		{"nothing to say", []conditionUpdate{between, ok, ok}, nil},
		{"a failure, once", []conditionUpdate{fail("a"), fail("a"), between, fail("a")}, []string{"Warning Broken broken: a"}},
		{"a changed failure, again", []conditionUpdate{fail("a"), fail("b")}, []string{"Warning Broken broken: a", "Warning Broken broken: b"}},
		{"its end, once", []conditionUpdate{fail("a"), between, ok, ok}, []string{"Warning Broken", "Normal Fine Probe=True: fine"}},
		{"announced by the caller", []conditionUpdate{silent, ok}, []string{"Normal Fine Probe=True: fine"}},
		{"the event's own words", []conditionUpdate{{Type: typ, Reason: "Shown", Message: "shown", Fail: "x", EventReason: "Said", EventMessage: "said"}},
			[]string{"Warning Said said"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := newTestReconciler(t, Reconciler{Recorder: rec})
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
			for _, u := range tc.updates {
				r.setCondition(c, u, "t")
			}
			got := drain(rec)
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("event %d: %q, want %q...", i, got[i], tc.want[i])
				}
			}
			last := tc.updates[len(tc.updates)-1]
			if cond := findCondition(c, typ); cond == nil || cond.Reason != last.Reason || cond.Message != last.Message {
				t.Errorf("condition %+v, want the last update's", cond)
			}
		})
	}
}

func TestPlannerCondition(t *testing.T) {
	was := func(s corev1.ConditionStatus) *etcdv1beta2.ClusterCondition {
		return &etcdv1beta2.ClusterCondition{Type: etcdv1beta2.ClusterConditionAvailable, Status: s}
	}
	unavailable := planner.Condition{Type: etcdv1beta2.ClusterConditionAvailable, Reason: etcdv1beta2.ReasonNoQuorum, Message: "1 of 3"}
	available := planner.Condition{Type: etcdv1beta2.ClusterConditionAvailable, Status: true, Reason: etcdv1beta2.ReasonQuorumAvailable}
	for _, tc := range []struct {
		name                    string
		cond                    planner.Condition
		prev                    *etcdv1beta2.ClusterCondition
		fail, silent, recovered bool
		eventMessage            string
	}{
		{"Available turns False: announced", unavailable, was(corev1.ConditionTrue), true, false, false, "Available=False: 1 of 3"},
		{"Available False while forming: remembered", unavailable, nil, true, true, false, "Available=False: 1 of 3"},
		{"Available still False: remembered", unavailable, was(corev1.ConditionFalse), true, true, false, "Available=False: 1 of 3"},
		{"Available True: over", available, was(corev1.ConditionFalse), false, false, true, ""},
		{"Scaling: no event", planner.Condition{Type: etcdv1beta2.ClusterConditionScaling, Status: true, Reason: etcdv1beta2.ReasonScalingUp}, nil, false, false, false, ""},
	} {
		u := plannerCondition(tc.cond, tc.prev)
		if (u.Fail != "") != tc.fail || u.announcedByCaller != tc.silent || u.Recovered != tc.recovered || u.EventMessage != tc.eventMessage {
			t.Errorf("%s: %+v", tc.name, u)
		}
		if string(u.Type) != string(tc.cond.Type) || u.Status != tc.cond.Status || u.Reason != tc.cond.Reason {
			t.Errorf("%s: condition %+v, want the planner's %+v", tc.name, u, tc.cond)
		}
	}
}

func TestReconciledCondition(t *testing.T) {
	const typ = etcdv1beta2.ClusterConditionReconciled
	for _, tc := range []struct {
		name       string
		err        error
		announceIt bool
		want       conditionUpdate
	}{
		{"succeeded", nil, false, conditionUpdate{Type: typ, Status: true, Reason: etcdv1beta2.ReasonReconciled, Recovered: true}},
		{"observe failed", errors.New("no pods"), true, conditionUpdate{Type: typ, Reason: "R", Fail: "R: no pods"}},
		{"step failed (its own event)", errors.New("quota"), false, conditionUpdate{Type: typ, Reason: "R", Fail: "R", announcedByCaller: true}},
	} {
		wantUpdate(t, tc.name, reconciledCondition("R", tc.err, tc.announceIt), tc.want)
	}
}

// wantUpdate fails the test unless got says what want says of the condition and its
// event: Type, Status, Reason, Fail, Recovered, EventReason and announcedByCaller.
func wantUpdate(t *testing.T, name string, got, want conditionUpdate) {
	t.Helper()
	if got.Type != want.Type || got.Status != want.Status || got.Reason != want.Reason || got.Fail != want.Fail ||
		got.Recovered != want.Recovered || got.EventReason != want.EventReason || got.announcedByCaller != want.announcedByCaller {
		t.Errorf("%s: %+v, want %+v", name, got, want)
	}
}
