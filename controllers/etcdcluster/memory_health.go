package etcdcluster

import (
	"sync"
	"time"
)

// healthTracker remembers, per cluster, since when each pod or member has been seen
// unhealthy. The planner's grace periods run from these times. It is in memory on purpose:
// an operator restart only restarts the graces, which delays a replacement and never
// hastens one.
type healthTracker struct {
	mu    sync.Mutex
	since map[string]map[string]time.Time // cluster key → subject → first seen unhealthy
}

func newHealthTracker() *healthTracker {
	return &healthTracker{since: map[string]map[string]time.Time{}}
}

// observe records subject's health at now and returns since when it has been unhealthy
// (zero when healthy).
func (h *healthTracker) observe(cluster, subject string, healthy bool, now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.since[cluster]
	if m == nil {
		m = map[string]time.Time{}
		h.since[cluster] = m
	}
	if healthy {
		delete(m, subject)
		return time.Time{}
	}
	t, ok := m[subject]
	if !ok {
		t = now
		m[subject] = t
	}
	return t
}

// retain drops subjects of a cluster that were not seen in this observation.
func (h *healthTracker) retain(cluster string, seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.since[cluster] {
		if !seen[s] {
			delete(h.since[cluster], s)
		}
	}
}

func (h *healthTracker) forget(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, cluster)
}
