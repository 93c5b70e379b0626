package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// shardActions records the steps each operator instance performs on one cluster, split
// at the moment the test has seen the cluster's move reach the instance it leaves.
// After the move, the reconciles that change nothing (Wait, Done) are kept apart: the
// hook runs when a step ends, so one that began before the move (the idle cluster's
// Done) may end after it; a step that changes something cannot have, as the cluster
// was idle (its last step a Done) when it was moved.
type shardActions struct {
	cluster string
	mu      sync.Mutex
	moved   bool
	before  map[string][]string // instance → steps before the move
	after   map[string][]string // instance → steps after it that change something
	idle    map[string][]string // instance → Wait and Done after the move
	last    map[string]planner.Kind
}

func (s *shardActions) hook(instance string) func(context.Context, string, planner.Action) {
	return func(_ context.Context, cluster string, a planner.Action) {
		if cluster != s.cluster {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.last[instance] = a.Kind
		switch {
		case s.moved && (a.Kind == planner.Wait || a.Kind == planner.Done):
			s.idle[instance] = append(s.idle[instance], a.String())
		case s.moved:
			s.after[instance] = append(s.after[instance], a.String())
		default:
			s.before[instance] = append(s.before[instance], a.String())
		}
	}
}

func (s *shardActions) move() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moved = true
}

// lastWas reports whether instance's last step was of kind k.
func (s *shardActions) lastWas(instance string, k planner.Kind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.last[instance]
	return ok && last == k
}

func (s *shardActions) steps() (before, after map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := func(m map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			out[k] = append([]string(nil), v...)
		}
		return out
	}
	return cp(s.before), cp(s.after)
}

// memberRun is what a restart or a replacement of a member pod changes.
type memberRun struct {
	uid      types.UID
	restarts int32
}

func memberRuns(pods map[string]corev1.Pod) map[string]memberRun {
	out := map[string]memberRun{}
	for name, p := range pods {
		r := memberRun{uid: p.UID}
		for _, cs := range p.Status.ContainerStatuses {
			r.restarts += cs.RestartCount
		}
		out[name] = r
	}
	return out
}

// TestClusterMovesBetweenShards: two operator instances share the bench, one per shard
// of etcd.database.coreos.com/shard, each leading its own Lease. A cluster of shard a is
// created by a; relabelled for shard b, it is released by a (which performs no step on
// it once it has seen the move, though it is then scaled) and taken over in place by b,
// which scales it: the running member keeps its pod (same UID) and was never restarted.
func TestClusterMovesBetweenShards(t *testing.T) {
	e := setupWithOperatorImage(t)
	e.StopOperatorNow()
	const (
		name = "moving"
		key  = "etcd.database.coreos.com/shard"
	)
	rec := &shardActions{cluster: "default/" + name, before: map[string][]string{}, after: map[string][]string{},
		idle: map[string][]string{}, last: map[string]planner.Kind{}}
	a := e.StartShard(etcdcluster.Shard{Key: key, Value: "a"}, rec.hook("a"))
	b := e.StartShard(etcdcluster.Shard{Key: key, Value: "b"}, rec.hook("b"))
	// Both lead at once: each shard elects on a Lease of its own.
	e.WaitLeading(30*time.Second, a, b)

	c := newCluster(name, 1)
	c.Labels = map[string]string{key: "a"}
	e.Create(c)
	e.WaitAvailable(name, 1, 90*time.Second)
	runs := memberRuns(e.MemberPods(name))
	if before, _ := rec.steps(); len(before["a"]) == 0 || len(before["b"]) != 0 {
		t.Fatalf("steps before the move: %v; want shard a's only", before)
	}
	// Moved once idle (as the README asks): a's last step a Done, so no step that
	// changes something is under way when the move arrives.
	e.Eventually(60*time.Second, "shard a has nothing left to do on the cluster", func() error {
		if !rec.lastWas("a", planner.Done) {
			return fmt.Errorf("shard a's last step is not a Done")
		}
		return nil
	})

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Labels[key] = "b" })
	// Steps are counted as a's after the move once a's cache shows it: a step of a
	// reconcile that began before (a "done" of the idle cluster) may end just after the
	// update was sent.
	e.Eventually(30*time.Second, "shard a sees the cluster moved", func() error {
		var seen etcdv1beta2.EtcdCluster
		if err := a.Client().Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &seen); err != nil {
			return err
		}
		if v := seen.Labels[key]; v != "b" {
			return fmt.Errorf("shard a's cache has %s=%q", key, v)
		}
		return nil
	})
	rec.move()
	// Scaled once moved: were shard a still acting, it would take steps for this too.
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 })
	e.WaitAvailable(name, 2, 120*time.Second)

	_, after := rec.steps()
	if len(after["a"]) != 0 {
		t.Errorf("shard a acted on the cluster it no longer holds: %v", after["a"])
	}
	if len(after["b"]) == 0 {
		t.Errorf("shard b took no step for the scale-up (steps after the move: %v)", after)
	}
	now := memberRuns(e.MemberPods(name))
	for pod, was := range runs {
		if is, ok := now[pod]; !ok || is != was {
			t.Errorf("member pod %s: %+v before the move, %+v (present %v) after: want the same pod, not restarted", pod, was, is, ok)
		}
	}
	if len(now) != 2 {
		t.Errorf("member pods after the scale-up: %v; want 2", now)
	}
	rec.mu.Lock()
	t.Logf("steps after the move: %v; reconciles changing nothing: %v", after, rec.idle)
	rec.mu.Unlock()
}
