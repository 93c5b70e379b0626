package etcdcluster

import (
	"strings"
	"sync"
	"time"
)

// setupReads remembers, per member pod being set up (keyed namespace/name/podUID of its
// cluster), when its events were read last, how long until the next read, and what that
// read found (observe_kubeletwarnings.go). Without it every reconcile of a cluster read
// each starting pod's events again: on a bench where pods took a minute to start, a fleet
// of 100 created at once listed events 17 times per cluster, each an uncached scan of the
// namespace's events on the API server the pods start through.
type setupReads struct {
	mu sync.Mutex
	m  map[string]setupRead
}

type setupRead struct {
	next    time.Time       // not read again before
	every   time.Duration   // the interval that led to next; doubled at each read
	warning *kubeletWarning // what the last read found; nil: nothing
}

func (s *setupReads) get(key string) (setupRead, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

func (s *setupReads) put(key string, v setupRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]setupRead{}
	}
	s.m[key] = v
}

// keepOnly drops cluster's entries whose key is not in keep: pods that started, went
// or were replaced.
func (s *setupReads) keepOnly(cluster string, keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if strings.HasPrefix(k, cluster+"/") && !keep[k] {
			delete(s.m, k)
		}
	}
}

func (s *setupReads) forget(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	deleteCluster(s.m, cluster)
}
