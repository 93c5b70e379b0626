package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestNodeDrain drains (`kubectl drain`, evictions through the Eviction API, so the
// PodDisruptionBudgets count) a node that holds a member of a 3-member cluster (one
// member per node) and the single member of a 1-member cluster, under a writer on each:
//   - both budgets count every member, so the drain's evictions are refused while the
//     operator moves each member off the cordoned node add-before-remove: a learner on
//     another node, promoted, leadership moved, the old member removed and its pod
//     deleted. The 3-member cluster never has fewer than three voters, the 1-member
//     cluster never fewer than one; a second eviction tried by hand meanwhile is refused;
//   - the drain completes, no acknowledged write fails or is lost; then the node is
//     uncordoned and OffCordonedNodes is True again;
//   - then no node is left that could take a new member of the 3-member cluster (the
//     fourth node cordoned): draining one of its nodes reports NoNodeToLeaveTo, lowers
//     its budget to a quorum so the drain is not blocked forever, and the drain evicts
//     that member; the cluster keeps a quorum and is whole again once the nodes are
//     uncordoned.
func TestNodeDrain(t *testing.T) {
	e := framework.SetupWithOptions(t, bench.Options{Nodes: 4})
	ctx := context.Background()

	three := newCluster("drain3", 3)
	three.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true}
	e.Create(three)
	e.WaitAvailable("drain3", 3, 180*time.Second)
	free := freeNode(t, e, "drain3")

	// The single member goes onto a node that holds a member of drain3 (any but the
	// free one), and may move to any other node later.
	one := newCluster("drain1", 1)
	one.Spec.Pod = &etcdv1beta2.PodPolicy{Affinity: notOnNode(free)}
	e.Create(one)
	e.WaitAvailable("drain1", 1, 180*time.Second)
	var target, oldSingle string
	for n, p := range e.MemberPods("drain1") {
		target, oldSingle = p.Spec.NodeName, n
	}
	var movedFirst string
	for n, p := range e.MemberPods("drain3") {
		if p.Spec.NodeName == target {
			movedFirst = n
		}
	}
	if target == "" || movedFirst == "" {
		t.Fatalf("drain1's member on node %q, drain3's member there %q", target, movedFirst)
	}
	t.Logf("draining %s: drain1's %s, drain3's %s (free node %s)", target, oldSingle, movedFirst, free)
	checkBudgets(t, e, map[string]int{"drain3": 3, "drain1": 1})

	load3, load1 := e.StartLoad("drain3", loadRate), e.StartLoad("drain1", loadRate)
	flowing(t, load3, 2*loadRate)
	flowing(t, load1, 2*loadRate)
	mon3, mon1 := monitorMembership(e, "drain3"), monitorMembership(e, "drain1")
	sawLeaving1 := watchCondition(e, "drain1", etcdv1beta2.ReasonLeavingCordonedNode)
	sawLeaving3 := watchCondition(e, "drain3", etcdv1beta2.ReasonLeavingCordonedNode)

	kubectl := filepath.Join(testenv.CacheDir(), "envtest-"+testenv.K8sVersion, "kubectl")
	drainStart := time.Now()
	drained := startDrain(kubectl, e.Bench.Kubeconfig(), target)

	// Every member counts: a healthy member's eviction is refused, on the drained node
	// or elsewhere, while the operator moves the one on the drained node.
	tried := ""
	for n, p := range e.MemberPods("drain3") {
		if n == movedFirst || p.DeletionTimestamp != nil || !podIsReady(p) {
			continue
		}
		err := e.C.SubResource("eviction").Create(ctx, &p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: p.Namespace}})
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evicting a member (%s) of drain3 during the drain: %v, want 429 Too Many Requests", n, err)
		}
		tried = n
		break
	}
	if tried == "" {
		// With three members and one being moved, two are Ready elsewhere.
		t.Fatalf("no healthy member of drain3 to try an eviction on: %v", e.MemberPods("drain3"))
	}

	drained.wait(t, 10*time.Minute)
	t.Logf("kubectl drain finished in %v", time.Since(drainStart).Round(time.Second))

	e.WaitAvailable("drain3", 3, 180*time.Second)
	e.WaitAvailable("drain1", 1, 60*time.Second)
	for _, name := range []string{"drain3", "drain1"} {
		for n, p := range e.MemberPods(name) {
			if p.Spec.NodeName == target {
				t.Errorf("%s: pod %s still on the drained node %s", name, n, target)
			}
		}
	}
	if _, ok := e.MemberPods("drain1")[oldSingle]; ok {
		t.Errorf("drain1: the old member's pod %s is still there", oldSingle)
	}
	if _, ok := e.MemberPods("drain3")[movedFirst]; ok {
		t.Errorf("drain3: the old member's pod %s is still there", movedFirst)
	}
	if !sawLeaving1() {
		t.Errorf("drain1 never reported OffCordonedNodes=False (%s)", etcdv1beta2.ReasonLeavingCordonedNode)
	}
	if !sawLeaving3() {
		t.Errorf("drain3 never reported OffCordonedNodes=False (%s)", etcdv1beta2.ReasonLeavingCordonedNode)
	}

	mon3.finish()
	mon1.finish()
	mon1.mu.Lock()
	t.Logf("drain1 membership: samples=%d minVoters=%d maxLearners=%d maxMembers=%d", mon1.samples, mon1.minVoters, mon1.maxLearners, mon1.maxMembers)
	if mon1.samples == 0 || mon1.minVoters < 1 || mon1.maxLearners > 1 || mon1.maxMembers > 2 {
		t.Errorf("drain1: the single member was not moved add-before-remove: minVoters=%d maxLearners=%d maxMembers=%d", mon1.minVoters, mon1.maxLearners, mon1.maxMembers)
	}
	mon1.mu.Unlock()
	mon3.mu.Lock()
	t.Logf("drain3 membership: samples=%d minVoters=%d maxLearners=%d maxMembers=%d", mon3.samples, mon3.minVoters, mon3.maxLearners, mon3.maxMembers)
	if mon3.samples == 0 || mon3.minVoters < 3 || mon3.maxLearners > 1 || mon3.maxMembers > 4 {
		t.Errorf("drain3: not moved add-before-remove (fewer than three voters, or changes overlapped): minVoters=%d maxLearners=%d maxMembers=%d", mon3.minVoters, mon3.maxLearners, mon3.maxMembers)
	}
	mon3.mu.Unlock()

	flowing(t, load3, 2*loadRate)
	flowing(t, load1, 2*loadRate)

	uncordon(t, kubectl, e.Bench.Kubeconfig(), target)
	e.Eventually(60*time.Second, "drain1's OffCordonedNodes True again", func() error {
		c := e.Cluster("drain1")
		for _, cond := range c.Status.Conditions {
			if cond.Type == etcdv1beta2.ClusterConditionOffCordonedNodes && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", c.Status.Conditions)
	})
	checkBudgets(t, e, map[string]int{"drain3": 3, "drain1": 1})

	// Nowhere to go: the node free of drain3 members is cordoned, so with anti-affinity
	// no node can take a new member; draining a node of drain3 must not wait forever.
	spare := freeNode(t, e, "drain3")
	if out, err := exec.Command(kubectl, "--kubeconfig", e.Bench.Kubeconfig(), "cordon", spare).CombinedOutput(); err != nil {
		t.Fatalf("kubectl cordon: %v\n%s", err, out)
	}
	var stuck, stuckNode string
	for n, p := range e.MemberPods("drain3") {
		stuck, stuckNode = n, p.Spec.NodeName
		break
	}
	t.Logf("nowhere to go: %s cordoned, draining %s (drain3's %s)", spare, stuckNode, stuck)
	monStuck := monitorMembership(e, "drain3")
	sawNoNode := watchCondition(e, "drain3", etcdv1beta2.ReasonNoNodeToLeaveTo)
	drainStart = time.Now()
	drained = startDrain(kubectl, e.Bench.Kubeconfig(), stuckNode)
	drained.wait(t, 5*time.Minute)
	t.Logf("kubectl drain with nowhere to go finished in %v", time.Since(drainStart).Round(time.Second))
	if !sawNoNode() {
		t.Errorf("drain3 never reported OffCordonedNodes=False (%s)", etcdv1beta2.ReasonNoNodeToLeaveTo)
	}
	if _, ok := e.MemberPods("drain3")[stuck]; ok {
		t.Errorf("drain3: %s was not evicted by the drain", stuck)
	}
	uncordon(t, kubectl, e.Bench.Kubeconfig(), stuckNode)
	uncordon(t, kubectl, e.Bench.Kubeconfig(), spare)
	e.WaitAvailable("drain3", 3, 240*time.Second)
	monStuck.finish()
	monStuck.mu.Lock()
	t.Logf("drain3 membership with nowhere to go: samples=%d minVoters=%d maxLearners=%d maxMembers=%d", monStuck.samples, monStuck.minVoters, monStuck.maxLearners, monStuck.maxMembers)
	if monStuck.samples == 0 || monStuck.minVoters < 2 || monStuck.maxLearners > 1 || monStuck.maxMembers > 4 {
		t.Errorf("drain3: quorum lost or changes overlapped: minVoters=%d maxLearners=%d maxMembers=%d", monStuck.minVoters, monStuck.maxLearners, monStuck.maxMembers)
	}
	monStuck.mu.Unlock()
	checkBudgets(t, e, map[string]int{"drain3": 3})

	flowing(t, load3, 2*loadRate)
	flowing(t, load1, 2*loadRate)
	verifyLoad(t, load3)
	verifyLoad(t, load1)
}

// drainRun is a `kubectl drain` running in the background.
type drainRun struct {
	node string
	done chan error
	out  []byte
}

func startDrain(kubectl, kubeconfig, node string) *drainRun {
	d := &drainRun{node: node, done: make(chan error, 1)}
	go func() {
		var err error
		d.out, err = exec.Command(kubectl, "--kubeconfig", kubeconfig, "drain", node,
			"--ignore-daemonsets", "--delete-emptydir-data", "--timeout=600s").CombinedOutput()
		d.done <- err
	}()
	return d
}

// wait fails the test unless the drain finished without error within limit.
func (d *drainRun) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", d.node, err, d.out)
		}
	case <-time.After(limit):
		t.Fatalf("kubectl drain %s did not finish in %v", d.node, limit)
	}
}

func uncordon(t *testing.T, kubectl, kubeconfig, node string) {
	t.Helper()
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "uncordon", node).CombinedOutput(); err != nil {
		t.Fatalf("kubectl uncordon %s: %v\n%s", node, err, out)
	}
}

// freeNode is the bench node that holds no member pod of cluster name.
func freeNode(t *testing.T, e *framework.Env, name string) string {
	t.Helper()
	used := map[string]bool{}
	for _, p := range e.MemberPods(name) {
		used[p.Spec.NodeName] = true
	}
	for _, n := range e.Bench.Nodes() {
		if !used[n] {
			return n
		}
	}
	t.Fatalf("every node holds a member of %s", name)
	return ""
}

// notOnNode is a required node affinity that keeps pods off node.
func notOnNode(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{node}}},
		}}},
	}}
}

// checkBudgets: each cluster's PodDisruptionBudget has the given minAvailable, and the
// disruption controller allows size-minAvailable evictions of its healthy members.
func checkBudgets(t *testing.T, e *framework.Env, minAvailable map[string]int) {
	t.Helper()
	for name, want := range minAvailable {
		e.Eventually(60*time.Second, name+"'s PodDisruptionBudget", func() error {
			var pdb policyv1.PodDisruptionBudget
			if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &pdb); err != nil {
				return err
			}
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != want {
				return fmt.Errorf("minAvailable %v, want %d", pdb.Spec.MinAvailable, want)
			}
			size := e.Cluster(name).Spec.Size
			if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.CurrentHealthy != int32(size) ||
				pdb.Status.DisruptionsAllowed != int32(size-want) {
				return fmt.Errorf("status %+v, want %d healthy and %d disruptions allowed", pdb.Status, size, size-want)
			}
			if pdb.Spec.Selector == nil || !render.ClusterSelector(name).Matches(labels.Set(pdb.Spec.Selector.MatchLabels)) {
				return fmt.Errorf("selector %v does not select the cluster's pods", pdb.Spec.Selector)
			}
			return nil
		})
	}
}

// watchCondition samples cluster name's OffCordonedNodes condition until the test ends
// and reports whether it was ever False with reason.
func watchCondition(e *framework.Env, name, reason string) func() bool {
	var mu sync.Mutex
	seen := false
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var c etcdv1beta2.EtcdCluster
			if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
				continue
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == etcdv1beta2.ClusterConditionOffCordonedNodes && cond.Status == corev1.ConditionFalse && cond.Reason == reason {
					mu.Lock()
					seen = true
					mu.Unlock()
				}
			}
		}
	}()
	var once sync.Once
	return func() bool {
		once.Do(func() { close(stop) })
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}
