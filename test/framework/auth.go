package framework

import (
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

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
	return memberListAs(eps, clientv3.Config{Username: user, Password: password})
}

// OperatorLogPath is the file the in-process operator of this test logs to.
func (e *Env) OperatorLogPath() string { return e.Bench.Dir() + "/operator.log" }
