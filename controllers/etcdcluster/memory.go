package etcdcluster

import "strings"

// memory is everything the controller keeps of a cluster from one reconcile to the next,
// in one place so that one forget drops all of it when the cluster is deleted. What one
// reconcile finds and reports within itself lives in its observation (observe.go), not
// here. All of it is memory only, on purpose: a restarted operator starts graces and
// back-offs again, announces a persisting failure once more and dials etcd again, which
// only ever delays a step.
//
// Keys: most parts are keyed by the cluster's namespace/name; loss and lostBackups by
// namespace/name/UID, so that a cluster recreated under the same name starts afresh.
type memory struct {
	health  *healthTracker // since when each pod or member is unhealthy (memory_health.go)
	events  *eventMemo     // what each condition last announced (memory_events.go)
	backoff *stepBackoff   // the step that failed last, and its delay (memory_backoff.go)
	admins  adminCache     // etcd clients kept across reconciles (memory_admins.go)
	// ownWrites: the version of each cluster this operator last wrote, which the cache
	// must show before a reconcile reads it there (memory_ownwrites.go).
	ownWrites versionMemo
	// loss times total losses (observe_totalloss.go); lostBackups keeps what was found
	// to restore them from (observe_totalloss_backups.go).
	loss        lossClock
	lostBackups lostBackupCache
	// services: the chart's last render of each cluster's Services and budget
	// (memory_rendered.go).
	services renderedServices
	// inflight: each cluster's observation while it asks etcd, and when one was last cut
	// short by a member pod's deletion (watch_membergone.go).
	inflight *observationsInFlight
	// setupReads: when each starting member pod's events were read, and what was found
	// (memory_setupreads.go).
	setupReads setupReads
}

func newMemory() *memory {
	return &memory{health: newHealthTracker(), events: newEventMemo(), backoff: newStepBackoff(), inflight: &observationsInFlight{}}
}

// forget drops all that is kept of the cluster namespace/name (key), under any UID: the
// not-found branch of Reconcile calls it, so that nothing of a deleted cluster stays.
func (m *memory) forget(key string) {
	m.health.forget(key)
	m.events.forget(key)
	m.backoff.forget(key)
	m.admins.forget(key)
	m.ownWrites.forget(key)
	m.loss.forgetCluster(key)
	m.lostBackups.forgetCluster(key)
	m.services.forget(key)
	m.inflight.forget(key)
	m.setupReads.forget(key)
}

// deleteCluster deletes from m the keys of cluster (namespace/name) that go on with a
// "/" and more (a UID, a condition type).
func deleteCluster[V any](m map[string]V, cluster string) {
	for k := range m {
		if strings.HasPrefix(k, cluster+"/") {
			delete(m, k)
		}
	}
}

// forgetCluster drops the loss of every UID of cluster (namespace/name).
func (l *lossClock) forgetCluster(cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deleteCluster(l.since, cluster)
}

// forgetCluster drops the listings and failed choices of every UID of cluster
// (namespace/name); forget (observe_totalloss_backups.go) drops one UID's when its loss is over.
func (l *lostBackupCache) forgetCluster(cluster string) {
	// A listing still running keeps its result to itself.
	l.queue().ForgetIf(func(key string) bool { return strings.HasPrefix(key, cluster+"/") })
	l.ownerQueue().ForgetIf(func(key string) bool { return strings.HasPrefix(key, cluster+"/") })
	l.mu.Lock()
	defer l.mu.Unlock()
	deleteCluster(l.failures, cluster)
	deleteCluster(l.owned, cluster)
	l.checks.forgetCluster(cluster)
}
