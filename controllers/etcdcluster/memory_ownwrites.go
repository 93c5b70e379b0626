package etcdcluster

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A reconcile reads its cluster from the informer cache, which shows the previous
// reconcile's status write only once the watch event of that write has arrived. A
// reconcile that starts before it (the cluster was queued again by another event while
// the previous reconcile ran, and a kept etcd client makes the observation fast enough to
// win the race) would plan from the status as it was before the previous step was
// recorded, and repeat that step: CI saw a NOSPACE compaction planned twice from the
// same resourceVersion, and a member defragmented twice in a row. Its status patch,
// computed against that stale object, would also put back the old values of what it
// changes (a list of members done, bytes freed). So the operator remembers the
// resourceVersion of each cluster as it last wrote it, and reads the cluster from the API
// server instead while the cache does not show that version.

// versionMemo is, per cluster (namespace/name), the resourceVersion the cache must show
// before it is read instead of the API server.
type versionMemo struct {
	mu sync.Mutex
	m  map[string]string
}

func (v *versionMemo) get(key string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rv, ok := v.m[key]
	return rv, ok
}

func (v *versionMemo) set(key, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]string{}
	}
	v.m[key] = rv
}

func (v *versionMemo) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, key)
}

// getCluster reads the cluster for a reconcile: from the cache when it shows at least
// what this operator last wrote, else from the API server. ResourceVersions are only
// compared for equality (they are opaque): a cache at another version than the one
// written is either behind it or past it (someone changed the object since), and one
// read from the API server settles which; the memo then waits for the version read there.
func (r *Reconciler) getCluster(ctx context.Context, key types.NamespacedName, c *etcdv1beta2.EtcdCluster) error {
	if err := r.Get(ctx, key, c); err != nil {
		return err
	}
	want, ok := r.ownWrites.get(key.String())
	if !ok {
		return nil
	}
	if c.ResourceVersion == want {
		r.ownWrites.forget(key.String())
		return nil
	}
	// Decoded into an object of its own: decoding into c would keep what the cached copy
	// has and the API server's omits (a finished run, a cleared record).
	var fresh etcdv1beta2.EtcdCluster
	if err := r.apiReader().Get(ctx, key, &fresh); err != nil {
		return err
	}
	cached := c.ResourceVersion
	*c = fresh
	log.FromContext(ctx).V(1).Info("the cache did not show the operator's last write; cluster read from the API server",
		"written", want, "cached", cached, "read", c.ResourceVersion)
	if c.ResourceVersion == cached {
		r.ownWrites.forget(key.String())
	} else {
		r.ownWrites.set(key.String(), c.ResourceVersion)
	}
	return nil
}

// wrote records the cluster's resourceVersion after a write of this operator.
func (r *Reconciler) wrote(c *etcdv1beta2.EtcdCluster) {
	if c.ResourceVersion != "" {
		r.ownWrites.set(clusterKey(c), c.ResourceVersion)
	}
}
