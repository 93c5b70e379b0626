package etcdcluster

import (
	"sync"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// eventMemo remembers, per cluster and condition, what was last announced by an event,
// so a state that persists is announced once, not at every reconcile. It is memory only:
// a restarted operator announces a persisting failure once more.
type eventMemo struct {
	mu   sync.Mutex
	last map[string]announced // by namespace/name/condition type
}

// announced is the failure last announced for a condition; key "" when none is.
type announced struct {
	key string
}

func newEventMemo() *eventMemo { return &eventMemo{last: map[string]announced{}} }

func (m *eventMemo) get(cluster string, t etcdv1beta2.ClusterConditionType) (announced, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.last[cluster+"/"+string(t)]
	return a, ok
}

func (m *eventMemo) set(cluster string, t etcdv1beta2.ClusterConditionType, a announced) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last[cluster+"/"+string(t)] = a
}

func (m *eventMemo) forget(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	deleteCluster(m.last, cluster) // keys namespace/name/condition type (memory.go)
}
