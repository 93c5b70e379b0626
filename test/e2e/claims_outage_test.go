package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// A claim is a promise: a member whose claim survives gets its pod back on it after any
// outage, whether or not the others have quorum, and a cluster whose every pod went
// (evicted while its nodes were down) restarts from its claims, never reported lost.

// lostWatch samples the cluster's status until stopped and records every time it said
// the cluster was lost (phase Failed or reason AllMembersLost).
type lostWatch struct {
	stop, done chan struct{}
	mu         sync.Mutex
	seen       []string
}

func watchNeverLost(e *framework.Env, name string) *lostWatch {
	w := &lostWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			var c etcdv1beta2.EtcdCluster
			if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &c); err == nil {
				if c.Status.Phase == etcdv1beta2.ClusterPhaseFailed || c.Status.Reason == etcdv1beta2.ReasonAllMembersLost {
					w.mu.Lock()
					if len(w.seen) < 5 {
						w.seen = append(w.seen, fmt.Sprintf("phase %s reason %s", c.Status.Phase, c.Status.Reason))
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *lostWatch) check(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	if len(w.seen) > 0 {
		t.Errorf("the cluster was reported lost: %v", w.seen)
	}
}

// waitEvicted waits until the control plane has evicted every named pod (deletion
// started while its node is down).
func waitEvicted(e *framework.Env, name string, pods []string, timeout time.Duration) {
	e.Eventually(timeout, "the member pods evicted", func() error {
		now := e.MemberPods(name)
		for _, n := range pods {
			if p, ok := now[n]; ok && p.DeletionTimestamp == nil {
				return fmt.Errorf("pod %s not evicted yet (phase %s)", n, p.Status.Phase)
			}
		}
		return nil
	})
}

// waitBackOnClaims waits until every named member has a new pod (another UID) that is
// Ready.
func waitBackOnClaims(e *framework.Env, name string, old map[string]corev1.Pod, timeout time.Duration) {
	e.Eventually(timeout, "the members' pods back on their claims", func() error {
		now := e.MemberPods(name)
		for n, o := range old {
			p, ok := now[n]
			if !ok || p.UID == o.UID {
				return fmt.Errorf("pod %s not recreated yet", n)
			}
			if !podIsReady(p) {
				return fmt.Errorf("pod %s not ready (phase %s)", n, p.Status.Phase)
			}
		}
		return nil
	})
}

// TestOneMemberClaimAfterEviction: a one-member cluster on a claim; its node goes down
// until the control plane evicts its pod, then comes back. The member gets its pod back
// on its claim: same member ID, same cluster ID, its keys, Available, never Failed.
func TestOneMemberClaimAfterEviction(t *testing.T) {
	e := framework.Setup(t)
	const name = "promise1"
	createOnClaims(e, name, 1, 120*time.Second)
	writeKeys(e, e.EtcdClient(name), 100, "/data", "v") // dump reads /data/
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	clusterID := e.Cluster(name).Status.ClusterID
	old := e.MemberPods(name)
	if len(old) != 1 {
		t.Fatalf("%d member pods, want 1", len(old))
	}
	var victim string
	for n := range old {
		victim = n
	}
	node := old[victim].Spec.NodeName
	lost := watchNeverLost(e, name)

	if err := e.Bench.Faults().NodeDown(node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Bench.Faults().NodeUp(node) })
	down := time.Now()
	waitEvicted(e, name, []string{victim}, 180*time.Second)
	t.Logf("pod %s evicted %v after node %s went down", victim, time.Since(down).Round(time.Second), node)
	e.Eventually(60*time.Second, "the operator waiting to restart the member on its claim", func() error {
		if c := e.Cluster(name); c.Status.Reason != etcdv1beta2.ReasonRecreatingPod || !slices.Contains(c.Status.Members.Unready, victim) {
			return fmt.Errorf("phase %s reason %s members %+v", c.Status.Phase, c.Status.Reason, c.Status.Members)
		}
		return nil
	})

	if err := e.Bench.Faults().NodeUp(node); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	waitBackOnClaims(e, name, old, 180*time.Second)
	e.WaitAvailable(name, 1, 120*time.Second)
	t.Logf("node up → member back and Available in %v", time.Since(up).Round(time.Second))
	lost.check(t)

	sameMembersAndCluster(t, e, name, before, clusterID)
	got := dump(t, e.EtcdClient(name))
	for i := range 100 {
		k, v := fmt.Sprintf("/data/%04d", i), fmt.Sprintf("v%d", i)
		if got[k] != v {
			t.Fatalf("key %s = %q after the outage, want %q", k, got[k], v)
		}
	}
	if framework.HasAny(e.EventReasons(name), "QuorumLost", "MemberReplaced", "RestoringFromBackup") {
		t.Errorf("the member was not simply restarted on its claim: %v", e.EventReasons(name))
	}
}

// TestMachineRoomOutage: a three-member cluster on claims under writes; every node that
// holds a member goes off until every member pod is evicted, then on. The cluster comes
// back from its claims: the same members, the same cluster ID, no acknowledged write
// lost, new writes acknowledged, never reported lost. (One node without a member stays
// up: Kubernetes evicts nothing while it can reach no node at all, taking that for a
// fault of its own network; the pods then simply restart where they were.)
func TestMachineRoomOutage(t *testing.T) {
	e := framework.SetupWithOptions(t, bench.Options{Nodes: 4})
	const name = "machineroom"
	spare := e.Bench.Nodes()[3]
	c := newCluster(name, 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true, Affinity: notOnNode(spare), PersistentVolumeClaimSpec: claimSpec()}
	e.Create(c)
	e.WaitAvailable(name, 3, 180*time.Second)
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	clusterID := e.Cluster(name).Status.ClusterID
	old := e.MemberPods(name)
	var names, nodes []string
	for n, p := range old {
		names = append(names, n)
		if !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	load := e.StartLoad(name, 20)
	flowing(t, load, 100)
	lost := watchNeverLost(e, name)

	for _, node := range nodes {
		if err := e.Bench.Faults().NodeDown(node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Bench.Faults().NodeUp(node) })
	}
	down := time.Now()
	waitEvicted(e, name, names, 180*time.Second)
	t.Logf("every member pod evicted %v after nodes %v went down", time.Since(down).Round(time.Second), nodes)
	e.Eventually(60*time.Second, "the operator waiting to restart the members on their claims", func() error {
		c := e.Cluster(name)
		if c.Status.Reason != etcdv1beta2.ReasonRecreatingPod {
			return fmt.Errorf("phase %s reason %s members %+v", c.Status.Phase, c.Status.Reason, c.Status.Members)
		}
		for _, n := range names {
			if !slices.Contains(c.Status.Members.Unready, n) {
				return fmt.Errorf("status forgot member %s: %+v", n, c.Status.Members)
			}
		}
		return nil
	})

	for _, node := range nodes {
		if err := e.Bench.Faults().NodeUp(node); err != nil {
			t.Fatal(err)
		}
	}
	up := time.Now()
	waitBackOnClaims(e, name, old, 240*time.Second)
	e.WaitAvailable(name, 3, 120*time.Second)
	t.Logf("nodes up → members back and Available in %v", time.Since(up).Round(time.Second))
	flowing(t, load, 100) // new writes acknowledged after the outage
	lost.check(t)

	sameMembersAndCluster(t, e, name, before, clusterID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := load.Verify(ctx)
	t.Logf("load: %s (writes during the outage fail by design; none acknowledged may be lost)", res)
	if err != nil {
		t.Error(err)
	}
	if framework.HasAny(e.EventReasons(name), "QuorumLost", "MemberReplaced", "RestoringFromBackup", "ForceNewCluster") {
		t.Errorf("the members were not simply restarted on their claims: %v", e.EventReasons(name))
	}
}

// TestClaimOnLostNode: a three-member cluster on claims under writes; the node of one
// member goes down and never comes back, so its pod stays evicted and its claim (bound
// to that node) can never be used. The member is replaced from the survivors (a new
// member under a new name, on a new claim); nothing is restored from a backup and no
// acknowledged write is lost.
func TestClaimOnLostNode(t *testing.T) {
	e := framework.Setup(t)
	const name = "lostnode"
	c := newCluster(name, 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: claimSpec()}
	e.Create(c)
	e.WaitAvailable(name, 3, 180*time.Second)
	node, victim := nodeOfOneMember(t, e, name)
	gone := memberByName(t, e, name, victim)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)
	lost := watchNeverLost(e, name)

	if err := e.Bench.Faults().NodeDown(node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Bench.Faults().NodeUp(node) })
	down := time.Now()
	waitReplaced(t, e, name, gone.ID, victim, 3, 240*time.Second)
	t.Logf("node down → member replaced from the survivors in %v", time.Since(down).Round(time.Second))
	flowing(t, load, 2*loadRate)
	verifyLoad(t, load)
	lost.check(t)
	for pod, p := range e.MemberPods(name) {
		if pod != victim && p.Spec.NodeName == node {
			t.Errorf("replacement %s was placed on the lost node %s", pod, node)
		}
	}
	if framework.HasAny(e.EventReasons(name), "RestoringFromBackup", "ForceNewCluster", "QuorumLost") {
		t.Errorf("a member on a lost node must be replaced from the survivors: %v", e.EventReasons(name))
	}
}

// sameMembersAndCluster fails the test unless the cluster's members are before's, by
// ID, and its cluster ID is clusterID: the cluster came back as itself.
func sameMembersAndCluster(t *testing.T, e *framework.Env, name string, before []*framework.EtcdMember, clusterID string) {
	t.Helper()
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
		t.Errorf("members changed: %v → %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}
	if got := e.Cluster(name).Status.ClusterID; got != clusterID {
		t.Errorf("cluster ID %s → %s", clusterID, got)
	}
}
