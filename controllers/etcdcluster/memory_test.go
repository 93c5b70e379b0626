package etcdcluster

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// mapEntries counts the entries of every map in v, by the path of fields that leads to
// it, reading unexported fields too: a part added to memory later is counted without
// this test knowing of it.
func mapEntries(path string, v reflect.Value, out map[string]int) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			mapEntries(path, v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			mapEntries(path+"."+v.Type().Field(i).Name, v.Field(i), out)
		}
	case reflect.Map:
		if !notPerCluster[path] {
			out[path] = v.Len()
		}
	}
}

// notPerCluster are maps of memory keyed by something other than a cluster, each with
// a test of its own: the listing and metadata-reading goroutines per namespace
// (TestForgottenListingStillCounts).
var notPerCluster = map[string]bool{"memory.lostBackups.listings.running": true, "memory.lostBackups.owners.running": true}

// remember fills every part of m for cluster (namespace/name) with the UID uid, as
// reconciles of a cluster that lost everything, failed a step and announced it do.
func remember(t *testing.T, m *memory, cluster, uid string, now time.Time) {
	t.Helper()
	m.health.observe(cluster, "member-0", false, now)
	m.events.set(cluster, etcdv1beta2.ClusterConditionPodsHealthy, announced{key: "crash"})
	m.backoff.fail(cluster, "step", 1, now)
	m.backoff.waitOnEtcd(cluster, "step", 1, now)
	var dials int
	if _, err := m.admins.get(cluster, "uid", []string{"http://127.0.0.1:1"}, nil, adminCreds{}, dialCounting(t, &dials, []string{"http://127.0.0.1:1"})); err != nil {
		t.Fatal(err)
	}
	m.ownWrites.set(cluster, "42")
	if m.services.m == nil {
		m.services.m = map[string]renderedEntry{}
	}
	m.services.m[cluster] = renderedEntry{}
	// An observation cut short and its successor still asking etcd.
	m.inflight.begin(context.Background(), cluster)
	m.inflight.interrupt(cluster, now)
	m.inflight.begin(context.Background(), cluster)
	m.setupReads.put(cluster+"/pod-uid", setupRead{next: now})
	m.loss.observe(cluster+"/"+uid, true, now)
	m.lostBackups.put(cluster+"/"+uid, lostBackups{at: now})
	// A listing running and one waiting (the namespace's bound set around them).
	q := m.lostBackups.queue()
	q.PerNamespace = 100
	q.Begin(cluster+"/"+uid, nil, now)
	q.PerNamespace = 1
	q.Begin(cluster+"/"+uid+"-waiting", nil, now)
	// A choice's metadata reads: what they read, one running, one waiting, one done.
	m.lostBackups.putOwners(cluster+"/"+uid, map[string]ownership{"uid-b/bucket/key": {own: true}})
	oq := m.lostBackups.ownerQueue()
	oq.PerNamespace = 100
	oq.Begin(cluster+"/"+uid+"/owners/running", nil, now)
	oq.PerNamespace = 1
	oq.Begin(cluster+"/"+uid+"/owners/waiting", nil, now)
	oq.Put(cluster+"/"+uid+"/owners/done", ownerReads{}, now)
	m.lostBackups.checks.put(cluster+"/"+uid, "bucket/key", checkedBackup{})
	m.lostBackups.chose(cluster+"/"+uid, now, errors.New("no backup"))
}

// A deleted cluster leaves nothing in the controller's memory once its deletion is
// reconciled, whatever part of the memory it filled; another cluster's memory, even one
// whose name starts with the deleted one's, is kept.
func TestDeletedClusterIsForgotten(t *testing.T) {
	c := statusCluster("gone", "3.6.16")
	f := newClusterFixture(t, nil, c)
	remember(t, f.r.memory, clusterKey(c), string(c.UID), f.now)
	remember(t, f.r.memory, clusterKey(c)+"-2", "uid-other", f.now)

	filled := map[string]int{}
	mapEntries("memory", reflect.ValueOf(f.r.memory), filled)
	for part, n := range filled {
		if n != 2 {
			t.Errorf("%s: %d entries before the deletion, want this test to fill it for both clusters", part, n)
		}
	}
	if len(filled) < 9 {
		t.Fatalf("memory has %d maps (%v); the walk missed some", len(filled), filled)
	}

	if err := f.c.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, c.Name)
	left := map[string]int{}
	mapEntries("memory", reflect.ValueOf(f.r.memory), left)
	for part, n := range left {
		if n != 1 {
			t.Errorf("%s: %d entries after the deletion, want only the other cluster's", part, n)
		}
	}
}
