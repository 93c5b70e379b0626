package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestNoSpaceAlarmShownAndCleared raises etcd's NOSPACE alarm on a running member (through
// etcd's own alarm API, as a full quota would) and checks that the cluster says so within
// seconds: a warning event SpaceAvailable=False naming the member; and that the operator,
// finding the space back (the database is tiny), disarms it and turns the condition back,
// with a normal event.
func TestNoSpaceAlarmShownAndCleared(t *testing.T) {
	e := framework.Setup(t)
	const name = "alarm"
	cli := startAvailable(e, name, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	member := st.Header.MemberId
	raw := pb.NewMaintenanceClient(cli.ActiveConnection())
	if _, err := raw.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: member, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatalf("raise NOSPACE: %v", err)
	}
	raised := time.Now()
	// The operator remediates within a second or two (the database is tiny), so the
	// condition may be False only briefly: the warning event, which stays, is the record.
	e.Eventually(time.Minute, "a NoSpaceAlarm warning event naming the member", func() error {
		for _, ev := range stepEvents(t, e, name, etcdv1beta2.ReasonNoSpaceAlarm) {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, "SpaceAvailable=False") && strings.Contains(ev.Message, fmt.Sprintf("%x", member)) {
				return nil
			}
		}
		return fmt.Errorf("no such event among %v", e.EventReasons(name))
	})
	t.Logf("NOSPACE shown %v after it was raised", time.Since(raised).Round(time.Millisecond))

	e.Eventually(time.Minute, "NOSPACE disarmed by the operator and SpaceAvailable=True again", func() error {
		if al, err := cli.AlarmList(ctx); err != nil || len(al.Alarms) != 0 {
			return fmt.Errorf("alarms %v, %v", al, err)
		}
		if c := spaceCondition(e.Cluster(name)); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("SpaceAvailable %+v", c)
		}
		return nil
	})
	if !framework.HasAny(e.EventReasons(name), etcdv1beta2.ReasonAlarmDisarmed) {
		t.Errorf("no %s event: %v", etcdv1beta2.ReasonAlarmDisarmed, e.EventReasons(name))
	}
	if !framework.HasAny(e.EventReasons(name), etcdv1beta2.ReasonNoAlarm) {
		t.Errorf("no %s event after the alarm cleared: %v", etcdv1beta2.ReasonNoAlarm, e.EventReasons(name))
	}
}

func spaceCondition(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.ClusterCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == etcdv1beta2.ClusterConditionSpaceAvailable {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}
