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
// seconds: SpaceAvailable=False naming the member (or showing the remediation's
// progress), a warning event; and that the operator, finding the space back (the database
// is tiny), disarms it and turns the condition back, with a normal event.
func TestNoSpaceAlarmShownAndCleared(t *testing.T) {
	e := framework.Setup(t)
	const name = "alarm"
	e.Create(newCluster(name, 1))
	e.WaitAvailable(name, 1, 2*time.Minute)
	cli := e.EtcdClient(name)
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
	e.Eventually(time.Minute, "SpaceAvailable=False naming the member", func() error {
		c := spaceCondition(e.Cluster(name))
		named := c != nil && c.Reason == etcdv1beta2.ReasonNoSpaceAlarm && strings.Contains(c.Message, fmt.Sprintf("%x", member))
		if c == nil || c.Status != corev1.ConditionFalse || !(named || c.Reason == etcdv1beta2.ReasonNoSpaceRemediating) {
			return fmt.Errorf("SpaceAvailable %+v", c)
		}
		return nil
	})
	t.Logf("NOSPACE shown %v after it was raised", time.Since(raised).Round(time.Millisecond))
	if !framework.HasAny(e.EventReasons(name), etcdv1beta2.ReasonNoSpaceAlarm) {
		t.Errorf("no %s event: %v", etcdv1beta2.ReasonNoSpaceAlarm, e.EventReasons(name))
	}

	e.Eventually(time.Minute, "SpaceAvailable=True again, disarmed by the operator", func() error {
		if c := spaceCondition(e.Cluster(name)); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("SpaceAvailable %+v", c)
		}
		return nil
	})
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
