package etcdcluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

func alarmCond(t *testing.T, c *etcdv1beta2.EtcdCluster, typ etcdv1beta2.ClusterConditionType) etcdv1beta2.ClusterCondition {
	t.Helper()
	cond := findCondition(c, typ)
	if cond == nil {
		t.Fatalf("no %s condition in %+v", typ, c.Status.Conditions)
	}
	return *cond
}

// Alarms become SpaceAvailable/DataConsistent False naming the members, with one warning
// per new alarm (or new member under it) and one normal event when it clears; a
// persisting alarm changes nothing, so the status write stays a no-op.
func TestReportAlarms(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := newTestReconciler(t, Reconciler{Recorder: rec, Now: func() time.Time { return clock }})
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alarms"}}
	members := []etcdadmin.Member{{ID: 0xa1, Name: "alarms-a"}, {ID: 0xb2, Name: "alarms-b"}}
	report := func(known bool, alarms ...etcdadmin.Alarm) []string {
		clock = clock.Add(time.Minute)
		o := &observation{members: members, space: spaceObservation{alarmsKnown: known, alarms: alarms}}
		r.reportAlarms(c, o, clock.Format(timeFormat))
		return drain(rec)
	}
	noSpace := func(id uint64) etcdadmin.Alarm { return etcdadmin.Alarm{MemberID: id, Type: etcdadmin.AlarmNoSpace} }

	if evs := report(false, noSpace(0xa1)); len(evs) != 0 || len(c.Status.Conditions) != 0 {
		t.Fatalf("without an alarm list: events %v, conditions %+v", evs, c.Status.Conditions)
	}
	if evs := report(true); len(evs) != 0 {
		t.Fatalf("no alarm: events %v", evs)
	}
	for _, typ := range []etcdv1beta2.ClusterConditionType{etcdv1beta2.ClusterConditionSpaceAvailable, etcdv1beta2.ClusterConditionDataConsistent} {
		if cond := alarmCond(t, c, typ); cond.Status != corev1.ConditionTrue || cond.Reason != etcdv1beta2.ReasonNoAlarm {
			t.Fatalf("no alarm: %+v", cond)
		}
	}

	evs := report(true, noSpace(0xa1))
	cond := alarmCond(t, c, etcdv1beta2.ClusterConditionSpaceAvailable)
	if cond.Status != corev1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonNoSpaceAlarm ||
		!strings.Contains(cond.Message, "member alarms-a (ID a1)") || !strings.Contains(cond.Message, "disarms the alarm once every database is at least 10% below its quota") {
		t.Fatalf("NOSPACE: %+v", cond)
	}
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning NoSpaceAlarm SpaceAvailable=False") {
		t.Fatalf("NOSPACE raised: events %v", evs)
	}
	if cond := alarmCond(t, c, etcdv1beta2.ClusterConditionDataConsistent); cond.Status != corev1.ConditionTrue {
		t.Fatalf("DataConsistent under NOSPACE: %+v", cond)
	}

	// The same alarm at the next reconcile: no event, no change at all.
	before := c.Status.DeepCopy()
	if evs := report(true, noSpace(0xa1)); len(evs) != 0 {
		t.Fatalf("persisting alarm: events %v", evs)
	}
	if !equality.Semantic.DeepEqual(before, &c.Status) {
		t.Fatalf("persisting alarm changed the status:\n%+v\n%+v", before, c.Status)
	}
	// An observation without the list (quorum lost) leaves the condition as it was.
	if evs := report(false); len(evs) != 0 || !equality.Semantic.DeepEqual(before, &c.Status) {
		t.Fatalf("no alarm list: events %v, status %+v", evs, c.Status)
	}

	// Spreading to another member is announced once more.
	evs = report(true, noSpace(0xb2), noSpace(0xa1))
	if cond := alarmCond(t, c, etcdv1beta2.ClusterConditionSpaceAvailable); !strings.Contains(cond.Message, "member alarms-a (ID a1), member alarms-b (ID b2)") {
		t.Fatalf("NOSPACE on two: %+v", cond)
	}
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning NoSpaceAlarm") {
		t.Fatalf("NOSPACE spread: events %v", evs)
	}

	// Cleared; and CORRUPT on a member the list no longer holds is named by ID.
	evs = report(true, etcdadmin.Alarm{MemberID: 0xff, Type: etcdadmin.AlarmCorrupt})
	if cond := alarmCond(t, c, etcdv1beta2.ClusterConditionSpaceAvailable); cond.Status != corev1.ConditionTrue || cond.Reason != etcdv1beta2.ReasonNoAlarm {
		t.Fatalf("NOSPACE cleared: %+v", cond)
	}
	cond = alarmCond(t, c, etcdv1beta2.ClusterConditionDataConsistent)
	if cond.Status != corev1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonCorruptAlarm || !strings.Contains(cond.Message, "member ID ff") {
		t.Fatalf("CORRUPT: %+v", cond)
	}
	want := []string{"Normal NoAlarm SpaceAvailable=True", "Warning CorruptAlarm DataConsistent=False"}
	if len(evs) != 2 || !strings.HasPrefix(evs[0], want[0]) || !strings.HasPrefix(evs[1], want[1]) {
		t.Fatalf("cleared and CORRUPT: events %v, want %v", evs, want)
	}
}

// The sizes are the largest any member reported, the quota the members' own else the
// configured one, the alarms counted per type; all forgotten with the cluster.
func TestSpaceMetrics(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "space",
		Annotations: map[string]string{etcdv1beta2.QuotaBackendBytesAnnotation: "4294967296"}}}
	s := spaceSizes([]etcdadmin.EndpointStatus{
		{DBSize: 100, DBSizeInUse: 90},
		{DBSize: 300, DBSizeInUse: 40},
		{Err: errors.New("no answer"), DBSize: 999},
	})
	s.alarmsKnown, s.alarms = true, []etcdadmin.Alarm{{MemberID: 1, Type: etcdadmin.AlarmNoSpace}, {MemberID: 2, Type: etcdadmin.AlarmNoSpace}}
	recordSpace(c, s)
	for g, want := range map[*prometheus.GaugeVec]float64{clusterDBSize: 300, clusterDBSizeInUse: 90, clusterQuota: 4294967296} {
		if got := testutil.ToFloat64(g.WithLabelValues("ns", "space")); got != want {
			t.Errorf("gauge = %v, want %v", got, want)
		}
	}
	if got := testutil.ToFloat64(clusterAlarms.WithLabelValues("ns", "space", "NOSPACE")); got != 2 {
		t.Errorf("NOSPACE alarms = %v", got)
	}
	if got := testutil.ToFloat64(clusterAlarms.WithLabelValues("ns", "space", "CORRUPT")); got != 0 {
		t.Errorf("CORRUPT alarms = %v", got)
	}
	// A member reporting its quota (etcd >= 3.6) is believed over the spec: a changed
	// setting reaches only new members.
	s.quota = 2 << 30
	recordSpace(c, s)
	if got := testutil.ToFloat64(clusterQuota.WithLabelValues("ns", "space")); got != 2<<30 {
		t.Errorf("reported quota = %v", got)
	}
	forgetClusterMetrics("ns", "space")
	for _, g := range []prometheus.Collector{clusterDBSize, clusterDBSizeInUse, clusterQuota, clusterAlarms} {
		if n := seriesWith(t, g, "cluster", "space"); n != 0 {
			t.Errorf("%d series of the deleted cluster left", n)
		}
	}
}

func TestAlarmConditionOf(t *testing.T) {
	members := []etcdadmin.Member{{ID: 0xa1, Name: "m-a"}}
	raised := spaceObservation{alarms: []etcdadmin.Alarm{{MemberID: 0xa1, Type: etcdadmin.AlarmNoSpace}}}
	const typ = etcdv1beta2.ClusterConditionSpaceAvailable
	for _, tc := range []struct {
		name string
		o    *observation
		want conditionUpdate
	}{
		{"no alarm", &observation{members: members}, conditionUpdate{Type: typ, Status: true, Reason: etcdv1beta2.ReasonNoAlarm, Recovered: true}},
		{"raised", &observation{members: members, space: raised},
			conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonNoSpaceAlarm, Fail: "member m-a (ID a1)", EventReason: etcdv1beta2.ReasonNoSpaceAlarm}},
		{"remediating", &observation{members: members, space: raised, noSpaceReason: "Compacting", noSpaceMessage: "compacting"},
			conditionUpdate{Type: typ, Reason: "Compacting", Fail: "member m-a (ID a1)", EventReason: etcdv1beta2.ReasonNoSpaceAlarm}},
	} {
		wantUpdate(t, tc.name, alarmConditionOf(alarmConditions[0], tc.o), tc.want)
	}
}
