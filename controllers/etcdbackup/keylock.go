package etcdbackup

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// keyLock keeps the backup and verification controllers from working on one EtcdBackup
// at once (each already runs one reconcile per EtcdBackup at a time). It never waits: a
// reconcile that finds its EtcdBackup busy is requeued after busyRetry, because a backup
// holds the key for as long as it streams a snapshot to a tenant's endpoint, and a
// waiting reconcile would hold a worker of the other controller all that time.
type keyLock struct {
	mu   sync.Mutex
	held map[types.NamespacedName]bool
}

// busyRetry is how soon a reconcile that found its EtcdBackup busy runs again.
const busyRetry = 5 * time.Second

// tryLock takes key if no one holds it and returns its unlock; ok is false (and unlock
// nil) when it is held.
func (l *keyLock) tryLock(key types.NamespacedName) (unlock func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] {
		return nil, false
	}
	if l.held == nil {
		l.held = map[types.NamespacedName]bool{}
	}
	l.held[key] = true
	return func() {
		l.mu.Lock()
		delete(l.held, key)
		l.mu.Unlock()
	}, true
}
