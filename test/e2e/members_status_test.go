package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// requireMemberDetails waits until status.members lists size members, each healthy on
// version, with the same IDs the members answer with, exactly one of them Leader, the
// one etcd names, and status.members.leader naming it.
func requireMemberDetails(t *testing.T, e *framework.Env, name string, size int, version string) {
	t.Helper()
	e.Eventually(60*time.Second, fmt.Sprintf("status.members of %s: %d healthy members on %s, one leader", name, size, version), func() error {
		st := e.Cluster(name).Status.Members
		if len(st.Details) != size {
			return fmt.Errorf("%d members listed: %+v", len(st.Details), st.Details)
		}
		answers := e.MemberStatuses(name)
		leader, _, err := leaderOf(e, name)
		if err != nil {
			return err
		}
		leaders := 0
		for _, d := range st.Details {
			a, ok := answers[d.Name]
			switch {
			case !ok:
				return fmt.Errorf("%s listed, but no such member answers", d.Name)
			case d.ID != etcdadmin.FormatID(a.ID):
				return fmt.Errorf("%s listed with ID %s, answers as %s", d.Name, d.ID, etcdadmin.FormatID(a.ID))
			case !d.Healthy || d.Version != version:
				return fmt.Errorf("%s listed healthy=%v on %q", d.Name, d.Healthy, d.Version)
			case d.DBSize == nil || d.DBSize.IsZero():
				return fmt.Errorf("%s listed without its database size", d.Name)
			}
			if d.Role == etcdv1beta2.MemberRoleLeader {
				leaders++
				if d.Name != leader {
					return fmt.Errorf("%s listed as leader, %s leads", d.Name, leader)
				}
			}
		}
		if leaders != 1 || st.Leader != leader {
			return fmt.Errorf("%d members listed as leader, status.members.leader %q, %s leads", leaders, st.Leader, leader)
		}
		return nil
	})
}

// moveLeader asks the leader of the cluster's etcd itself to hand leadership to another
// voter, past the operator, and returns the new leader's pod name.
func moveLeader(t *testing.T, e *framework.Env, name string) string {
	t.Helper()
	leader, _ := waitLeader(t, e, name)
	var to string
	var toID uint64
	for pod, st := range e.MemberStatuses(name) {
		if pod != leader {
			to, toID = pod, st.ID
			break
		}
	}
	if to == "" {
		t.Fatalf("no member of %s besides the leader %s answers", name, leader)
	}
	p := e.MemberPods(name)[leader]
	ep := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(etcdv1beta2.EtcdClientPort))
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.MoveLeader(ctx, toID); err != nil {
		t.Fatalf("move leadership of %s from %s to %s: %v", name, leader, to, err)
	}
	return to
}
