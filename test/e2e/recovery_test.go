package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestQuorumLossRecovery is the opt-in side of quorum loss: two of three members' nodes
// go down for good, and with allow-force-new-cluster the operator seeds a new member
// from the survivor's data, removes the old members only once that member serves the
// survivor's revision, and grows back to three members — every key written before the
// loss is still there, under new member IDs.
func TestQuorumLossRecovery(t *testing.T) {
	dir := buildOperatorImage(t, render.OperatorCommand)
	// Five nodes: anti-affinity keeps one member per node, two nodes go down, and the
	// new member plus two regrown ones need three nodes that are up.
	e := framework.SetupWithOptions(t, bench.Options{Nodes: 5, ExtraImages: map[string]string{controllers.DefaultOperatorImage: dir}})
	const name = "phoenix"
	c := newCluster(name, 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true}
	c.Annotations = map[string]string{controllers.AnnotationQuorumLossGrace: "15s", controllers.AnnotationForceNewCluster: "true"}
	e.Create(c)
	e.WaitAvailable(name, 3, 90*time.Second)

	cli := e.EtcdClient(name)
	const keys = 300
	writeKeys(e, cli, keys, "/before", "v")
	// Quiesce: every member has applied every write, so any survivor holds them all.
	// (A recovery keeps what the survivor has; a write only a lost majority had applied
	// would be gone, which is why the recovery is opt-in.)
	sts := waitAllAnswer(e, name, 3, 30*time.Second)
	e.Eventually(30*time.Second, "members at one revision", func() error {
		sts = e.MemberStatuses(name)
		revs := map[int64]bool{}
		for _, st := range sts {
			revs[st.Revision] = true
		}
		if len(sts) != 3 || len(revs) != 1 {
			return fmt.Errorf("statuses %+v", sts)
		}
		return nil
	})
	old, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	oldIDs := framework.MemberIDs(old)
	oldClusterID := e.Cluster(name).Status.ClusterID
	if oldClusterID == "" {
		t.Fatal("status.clusterID is empty on a running cluster")
	}

	// The operator is stopped right after each recovery step (the step done, the status
	// after it not written) and a new one started: it must continue the same recovery.
	steps := make(chan string, 16)
	e.StopOperatorNow()
	controllers.AfterActionHook = func(ctx context.Context, cluster string, a planner.Action) {
		if cluster != "default/"+name || (a.Kind != planner.ForceNewCluster && a.Kind != planner.FinishRecovery) {
			return
		}
		steps <- a.String()
		<-ctx.Done()
	}
	t.Cleanup(func() {
		e.StopOperatorNow()
		controllers.AfterActionHook = nil
	})
	e.StartOperator()

	pods := e.MemberPods(name)
	var names []string
	for n := range pods {
		names = append(names, n)
	}
	slices.Sort(names)
	survivor := names[0]
	for _, n := range names[1:] {
		node := pods[n].Spec.NodeName
		if err := e.Bench.Kubelet().NodeDown(node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Bench.Kubelet().NodeUp(node) })
	}
	t.Logf("survivor %s; members %v lost", survivor, names[1:])

	var (
		recovery    *etcdv1beta2.RecoveryStatus
		interrupted []string
	)
	deadline := time.Now().Add(5 * time.Minute)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case s := <-steps:
			interrupted = append(interrupted, s)
			t.Logf("operator stopped after %s", s)
			e.StopOperatorNow()
			e.StartOperator()
		case <-tick.C:
			c := e.Cluster(name)
			if r := c.Status.Recovery; r != nil {
				if recovery == nil {
					recovery = r.DeepCopy()
					t.Logf("recovery %+v", *recovery)
				} else if r.Member != recovery.Member || r.Token != recovery.Token || r.Source != recovery.Source {
					t.Fatalf("a restarted operator started another recovery: %+v, then %+v", *recovery, *r)
				}
			}
			done = recovery != nil && c.Status.Recovery == nil &&
				framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) && len(c.Status.Members.Ready) == 3
		}
		if !done && time.Now().After(deadline) {
			e.DumpState()
			t.Fatalf("not recovered and regrown; steps interrupted: %v; status %+v", interrupted, e.Cluster(name).Status)
		}
	}
	// As in TestOperatorKilledBetweenReplaceSteps: collect a report the loop did not read.
	e.StopOperatorNow()
	for drained := false; !drained; {
		select {
		case s := <-steps:
			interrupted = append(interrupted, s)
		default:
			drained = true
		}
	}
	controllers.AfterActionHook = nil
	e.StartOperator()
	for _, k := range []string{"ForceNewCluster", "FinishRecovery"} {
		if !slices.ContainsFunc(interrupted, func(s string) bool { return strings.HasPrefix(s, k) }) {
			t.Errorf("no interrupted %s step: %v", k, interrupted)
		}
	}
	if recovery.Source != survivor || slices.Contains(names, recovery.Member) {
		t.Fatalf("recovery %+v: want source %s and a new member name", *recovery, survivor)
	}
	// Recorded (and announced) once, however often the operator restarted.
	if n := countOf(e.EventReasons(name), "ForceNewCluster"); n != 1 {
		t.Errorf("%d ForceNewCluster events, want 1", n)
	}
	for _, reason := range []string{"ForceNewCluster", "Recovered"} {
		if !framework.HasAny(e.EventReasons(name), reason) {
			t.Errorf("no %s event: %v", reason, e.EventReasons(name))
		}
	}
	// The seeded member copied the survivor's data in its init step, successfully.
	pods = e.MemberPods(name)
	p, ok := pods[recovery.Member]
	if !ok {
		t.Fatalf("the recovered member's pod %s is gone: %v", recovery.Member, pods)
	}
	if st := p.Status.InitContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
		t.Errorf("recovered member's init container: %+v", st)
	}
	// No old member runs: their pods are gone or going, and the members are all new.
	for n, p := range pods {
		if slices.Contains(names, n) && p.DeletionTimestamp == nil {
			t.Errorf("old member pod %s still runs", n)
		}
	}
	now, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range now {
		if _, dup := oldIDs[m.ID]; dup || m.IsLearner {
			t.Errorf("member %s (%x) learner=%v: want only new voting members", m.Name, m.ID, m.IsLearner)
		}
	}
	if len(now) != 3 {
		t.Errorf("%d members, want 3", len(now))
	}
	if id := e.Cluster(name).Status.ClusterID; id == "" || id == oldClusterID {
		t.Errorf("status.clusterID %q after the recovery, want the new cluster's (old %s)", id, oldClusterID)
	}
	// Every key written before the loss, through a fresh client on the new members.
	fresh := e.EtcdClient(name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := fresh.Get(ctx, "/before/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != keys {
		t.Fatalf("%d keys after the recovery, want %d", len(resp.Kvs), keys)
	}
	for i, kv := range resp.Kvs {
		if want := fmt.Sprintf("v%d", i); string(kv.Value) != want {
			t.Fatalf("%s = %q, want %q", kv.Key, kv.Value, want)
		}
	}
	if resp.Header.Revision < recovery.Revision {
		t.Errorf("revision %d after the recovery, below the survivor's %d", resp.Header.Revision, recovery.Revision)
	}
	if _, err := fresh.Put(ctx, "/after", "x"); err != nil {
		t.Errorf("write after the recovery: %v", err)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
