package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestQuorumLossRecovery is the opt-in side of quorum loss: two of three members' nodes
// go down for good, and with allow-force-new-cluster the operator seeds a new member
// from the survivor's data, removes the old members only once that member serves the
// survivor's revision, and grows back to three members — every key written before the
// loss is still there, under new member IDs.
func TestQuorumLossRecovery(t *testing.T) { testQuorumLossRecovery(t, false) }

// TestQuorumLossRecoveryTLS is the same with peer and client TLS: the new member's copy
// step dials the survivor over TLS with the operator's client certificate.
func TestQuorumLossRecoveryTLS(t *testing.T) { testQuorumLossRecovery(t, true) }

func testQuorumLossRecovery(t *testing.T, withTLS bool) {
	// Five nodes: anti-affinity keeps one member per node, two nodes go down, and the
	// new member plus two regrown ones need three nodes that are up.
	e := framework.SetupWithOptions(t, bench.Options{Nodes: 5})
	const name = "phoenix"
	c := newCluster(name, 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true}
	c.Annotations = map[string]string{etcdcluster.AnnotationQuorumLossGrace: "15s", etcdcluster.AnnotationForceNewCluster: "true"}
	access := plainAccess(e, name)
	if withTLS {
		pki := staticTLSSecrets(t, e, name)
		c.Spec.TLS = framework.StaticTLS("phoenix-peer", "phoenix-server", "phoenix-operator")
		access = tlsAccess(e, name, pki.ClientConfig(t))
	}
	e.Create(c)
	access.waitAvailable(3, 90*time.Second)

	cli := access.client()
	const keys = 300
	writeKeys(e, cli, keys, "/before", "v")
	// Quiesce: every member has applied every write, so any survivor holds them all.
	// (A recovery keeps what the survivor has; a write only a lost majority had applied
	// would be gone, which is why the recovery is opt-in.)
	e.Eventually(30*time.Second, "members at one revision", func() error {
		revs := access.revisions()
		distinct := map[int64]bool{}
		for _, r := range revs {
			distinct[r] = true
		}
		if len(revs) != 3 || len(distinct) != 1 {
			return fmt.Errorf("revisions %v", revs)
		}
		return nil
	})
	old, err := access.members()
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
	e.AfterAction = func(ctx context.Context, cluster string, a planner.Action) {
		if cluster != "default/"+name || (a.Kind != planner.ForceNewCluster && a.Kind != planner.FinishRecovery) {
			return
		}
		steps <- a.String()
		<-ctx.Done()
	}
	t.Cleanup(func() {
		e.StopOperatorNow()
		e.AfterAction = nil
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
		if err := e.Bench.Faults().NodeDown(node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Bench.Faults().NodeUp(node) })
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
	e.AfterAction = nil
	e.StartOperator()
	for _, k := range []string{"ForceNewCluster", "FinishRecovery"} {
		if !stepReported(interrupted, k) {
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
	now, err := access.members()
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
	fresh := access.client()
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

// clusterAccess reaches a cluster's members the way its TLS settings require.
type clusterAccess struct {
	waitAvailable func(size int, timeout time.Duration)
	client        func() *clientv3.Client
	members       func() ([]*framework.EtcdMember, error)
	revisions     func() map[string]int64 // by pod, of the members that answer
}

func plainAccess(e *framework.Env, name string) clusterAccess {
	return clusterAccess{
		waitAvailable: func(size int, timeout time.Duration) { e.WaitAvailable(name, size, timeout) },
		client:        func() *clientv3.Client { return e.EtcdClient(name) },
		members:       func() ([]*framework.EtcdMember, error) { return e.Members(name) },
		revisions: func() map[string]int64 {
			out := map[string]int64{}
			for pod, st := range e.MemberStatuses(name) {
				out[pod] = st.Revision
			}
			return out
		},
	}
}

func tlsAccess(e *framework.Env, name string, cfg *tls.Config) clusterAccess {
	return clusterAccess{
		waitAvailable: func(size int, timeout time.Duration) { e.WaitAvailableTLS(name, size, cfg, timeout) },
		client:        func() *clientv3.Client { return e.EtcdClientTLS(name, cfg) },
		members: func() ([]*framework.EtcdMember, error) {
			ms, err := e.MembersTLS(name, cfg)
			return framework.ToEtcdMembers(ms), err
		},
		revisions: func() map[string]int64 {
			out := map[string]int64{}
			for _, ep := range e.MemberEndpointsTLS(name) {
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: cfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
				if err != nil {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				if st, err := cli.Status(ctx, ep); err == nil {
					out[ep] = st.Header.Revision
				}
				cancel()
				cli.Close()
			}
			return out
		},
	}
}
