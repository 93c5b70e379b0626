package framework

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// WaitAvailableAuth is WaitAvailable for a cluster with etcd auth on: etcd's member list
// is read with the given credentials (etcd refuses it without).
func (e *Env) WaitAvailableAuth(name string, size int, timeout time.Duration, user, password string) *etcdv1beta2.EtcdCluster {
	e.t.Helper()
	return e.waitAvailable(name, size, timeout, " (as "+user+")", func() ([]*EtcdMember, error) {
		ms, err := memberListAuth(e.memberEndpoints(name), user, password)
		return ToEtcdMembers(ms), err
	})
}

func memberListAuth(eps []string, user, password string) ([]*etcdserverpb.Member, error) {
	if len(eps) == 0 {
		return nil, fmt.Errorf("no member pod has an IP")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Username: user, Password: password, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	ms := resp.Members
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return ms, nil
}

// OperatorLogPath is the file the in-process operator of this test logs to.
func (e *Env) OperatorLogPath() string { return e.Bench.Dir() + "/operator.log" }
