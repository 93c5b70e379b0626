package etcdbackup

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// keyLock is a mutex per key, held while it is in use and forgotten after: the backup
// and verification controllers each run one reconcile per EtcdBackup at a time, and this
// keeps the two of one EtcdBackup from running at once.
type keyLock struct {
	mu   sync.Mutex
	held map[types.NamespacedName]*keyHold
}

type keyHold struct {
	mu    sync.Mutex
	users int // holders and waiters
}

// lock waits for key and returns its unlock.
func (l *keyLock) lock(key types.NamespacedName) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[types.NamespacedName]*keyHold{}
	}
	h := l.held[key]
	if h == nil {
		h = &keyHold{}
		l.held[key] = h
	}
	h.users++
	l.mu.Unlock()
	h.mu.Lock()
	return func() {
		h.mu.Unlock()
		l.mu.Lock()
		if h.users--; h.users == 0 {
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
}
