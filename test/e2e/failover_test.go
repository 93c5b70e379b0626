package e2e

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// loadRate is the write load of the failover tests (puts/s).
const loadRate = 100

// flowing waits until the load has acknowledged n more writes.
func flowing(t *testing.T, l *framework.Load, n int) {
	t.Helper()
	if err := l.WaitAcked(n, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// verifyLoad stops the load and fails the test if a write failed or an
// acknowledged write was lost.
func verifyLoad(t *testing.T, l *framework.Load) framework.LoadResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := l.Verify(ctx)
	t.Logf("load: %s", res)
	if err != nil {
		t.Error(err)
	}
	if res.Failed != 0 {
		t.Errorf("%d writes failed despite client retries", res.Failed)
	}
	if res.Acked == 0 {
		t.Errorf("the load acknowledged no write at all")
	}
	return res
}

// membershipMonitor samples etcd's member list until stopped and records
// whether the operator ever had more than one change in flight.
type membershipMonitor struct {
	stop chan struct{}
	done chan struct{}

	mu          sync.Mutex
	samples     int
	maxLearners int
	maxMembers  int
	minVoters   int
	seen        map[uint64]string // every member ID ever listed
}

func monitorMembership(e *framework.Env, name string) *membershipMonitor {
	m := &membershipMonitor{stop: make(chan struct{}), done: make(chan struct{}), minVoters: 1 << 30, seen: map[uint64]string{}}
	go func() {
		defer close(m.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			ms, err := e.Members(name)
			if err != nil {
				continue
			}
			learners, voters := 0, 0
			for _, x := range ms {
				if x.IsLearner {
					learners++
				} else {
					voters++
				}
			}
			m.mu.Lock()
			m.samples++
			m.maxLearners = max(m.maxLearners, learners)
			m.maxMembers = max(m.maxMembers, len(ms))
			m.minVoters = min(m.minVoters, voters)
			for _, x := range ms {
				if x.Name != "" || m.seen[x.ID] == "" {
					m.seen[x.ID] = x.Name
				}
			}
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *membershipMonitor) finish() *membershipMonitor {
	close(m.stop)
	<-m.done
	return m
}

// checkOneAtATime: never two learners, never more members than size+1, never
// fewer voters than size-1 (one removal, then one addition).
func (m *membershipMonitor) checkOneAtATime(t *testing.T, size int) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Logf("membership samples=%d maxLearners=%d maxMembers=%d minVoters=%d", m.samples, m.maxLearners, m.maxMembers, m.minVoters)
	if m.samples == 0 {
		t.Fatal("the membership monitor got no sample")
	}
	if m.maxLearners > 1 || m.maxMembers > size+1 || m.minVoters < size-1 {
		t.Errorf("more than one membership change in flight: maxLearners=%d maxMembers=%d minVoters=%d (size %d)",
			m.maxLearners, m.maxMembers, m.minVoters, size)
	}
}

// leaderOf returns the pod whose member leads, per the members' own answers.
func leaderOf(e *framework.Env, name string) (string, framework.MemberStatus, error) {
	sts := e.MemberStatuses(name)
	for pod, st := range sts {
		if st.Leader != 0 && st.Leader == st.ID {
			return pod, st, nil
		}
	}
	return "", framework.MemberStatus{}, fmt.Errorf("no member reports itself leader (%d answered)", len(sts))
}

// waitLeader polls leaderOf: under load a member's status call can time out (one of
// three answering is not a cluster without a leader), so one look is not an answer.
func waitLeader(t *testing.T, e *framework.Env, name string) (string, framework.MemberStatus) {
	t.Helper()
	var pod string
	var st framework.MemberStatus
	e.Eventually(30*time.Second, "a member of "+name+" reports itself leader", func() error {
		var err error
		pod, st, err = leaderOf(e, name)
		return err
	})
	return pod, st
}

func maxTerm(sts map[string]framework.MemberStatus) uint64 {
	var t uint64
	for _, st := range sts {
		t = max(t, st.RaftTerm)
	}
	return t
}

func etcdRestarts(p corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerName {
			return cs.RestartCount
		}
	}
	return 0
}

// waitAllAnswer waits until every member pod answers Status and agrees on a leader.
func waitAllAnswer(e *framework.Env, name string, size int, timeout time.Duration) map[string]framework.MemberStatus {
	var sts map[string]framework.MemberStatus
	e.Eventually(timeout, fmt.Sprintf("all %d members of %s answer", size, name), func() error {
		sts = e.MemberStatuses(name)
		if len(sts) != size {
			return fmt.Errorf("%d of %d members answer", len(sts), size)
		}
		var leader uint64
		for _, st := range sts {
			if st.Leader == 0 || leader != 0 && st.Leader != leader {
				return fmt.Errorf("members disagree on the leader: %+v", sts)
			}
			leader = st.Leader
		}
		return nil
	})
	return sts
}

// killAndRecover SIGKILLs pod's etcd process and waits until the kubelet has restarted
// it and the cluster is back at full health, with the same members.
func killAndRecover(t *testing.T, e *framework.Env, l *framework.Load, name, pod string, size int) {
	t.Helper()
	flowing(t, l, 2*loadRate)
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	restarts := etcdRestarts(e.MemberPods(name)[pod])
	if err := e.Bench.Faults().KillPod("default", pod, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.Eventually(30*time.Second, "the killed container restarted", func() error {
		p, ok := e.MemberPods(name)[pod]
		if !ok {
			return fmt.Errorf("pod %s is gone", pod)
		}
		if n := etcdRestarts(p); n <= restarts {
			return fmt.Errorf("restartCount %d", n)
		}
		return nil
	})
	e.WaitAvailable(name, size, 60*time.Second)
	waitAllAnswer(e, name, size, 30*time.Second)
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	flowing(t, l, 2*loadRate)
	if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
		t.Errorf("membership changed after a restartable kill: before %v after %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}
	if _, ok := e.MemberPods(name)[pod]; !ok {
		t.Errorf("pod %s was deleted", pod)
	}
}

// TestKillMember: kill -9 of a follower and then of the leader. The kubelet restarts the
// container on the same data (restartPolicy Always), so the operator must replace
// nothing, and no acknowledged write may be lost.
func TestKillMember(t *testing.T) {
	e := framework.Setup(t)
	const name = "kill"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 90*time.Second)
	load := e.StartLoad(name, loadRate)

	t.Run("follower", func(t *testing.T) {
		leader, _ := waitLeader(t, e, name)
		var follower string
		for pod := range e.MemberPods(name) {
			if pod != leader {
				follower = pod
				break
			}
		}
		killAndRecover(t, e, load, name, follower, 3)
	})

	t.Run("leader", func(t *testing.T) {
		leader, st := waitLeader(t, e, name)
		killAndRecover(t, e, load, name, leader, 3)
		sts := waitAllAnswer(e, name, 3, 30*time.Second)
		if maxTerm(sts) <= st.RaftTerm {
			t.Errorf("no election after the leader was killed: term %d → %d", st.RaftTerm, maxTerm(sts))
		}
	})

	if n := load.Acked(); n == 0 {
		t.Fatal("no write acknowledged during the faults")
	}
	verifyLoad(t, load)
	if framework.HasAny(e.EventReasons(name), "MemberReplaced", "MemberRemoved", "MemberAdded") {
		t.Errorf("a member was replaced after a restartable kill: events %v", e.EventReasons(name))
	}
}

// waitReplaced waits until gone's member is out of etcd and the cluster is back at
// size with a new member under a new name.
func waitReplaced(t *testing.T, e *framework.Env, name string, goneID uint64, goneName string, size int, timeout time.Duration) {
	t.Helper()
	e.Eventually(timeout, fmt.Sprintf("member %s (%x) replaced", goneName, goneID), func() error {
		ms, err := e.Members(name)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.ID == goneID || m.Name == goneName {
				return fmt.Errorf("old member %s (%x) still listed", goneName, goneID)
			}
		}
		if len(ms) != size {
			return fmt.Errorf("%d members", len(ms))
		}
		return nil
	})
	e.WaitAvailable(name, size, 120*time.Second)
	waitAllAnswer(e, name, size, 30*time.Second)
	if !framework.HasAny(e.EventReasons(name), "MemberReplaced") || !framework.HasAny(e.EventReasons(name), "MemberPromoted") {
		t.Errorf("expected MemberReplaced and MemberPromoted events, got %v", e.EventReasons(name))
	}
}

func memberByName(t *testing.T, e *framework.Env, cluster, member string) *framework.EtcdMember {
	t.Helper()
	ms, err := e.Members(cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == member {
			return m
		}
	}
	t.Fatalf("no member %s in %v", member, framework.MemberIDs(ms))
	return nil
}

// TestDeletedPodReplaced: a member pod deleted takes its emptyDir data with it, so the
// member cannot come back: the operator removes it from etcd and adds a fresh member
// under a new name, one change at a time, under load.
func TestDeletedPodReplaced(t *testing.T) {
	e := framework.Setup(t)
	const name = "delpod"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 90*time.Second)
	load := e.StartLoad(name, loadRate)
	mon := monitorMembership(e, name)

	_, st := waitLeader(t, e, name)
	var victim string
	for pod, s := range e.MemberStatuses(name) {
		if s.ID != st.ID {
			victim = pod
			break
		}
	}
	gone := memberByName(t, e, name, victim)
	flowing(t, load, 2*loadRate)
	p := e.MemberPods(name)[victim]
	if err := e.C.Delete(context.Background(), &p); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	waitReplaced(t, e, name, gone.ID, victim, 3, 120*time.Second)
	flowing(t, load, 2*loadRate)
	mon.finish().checkOneAtATime(t, 3)
	verifyLoad(t, load)
	if _, ok := e.MemberPods(name)[victim]; ok {
		t.Errorf("the deleted pod's name %s was reused", victim)
	}
}

// nodeOfOneMember is a node that hosts exactly one of the cluster's member pods, and
// that member's pod.
func nodeOfOneMember(t *testing.T, e *framework.Env, name string) (node, pod string) {
	t.Helper()
	perNode := map[string][]string{}
	for pod, p := range e.MemberPods(name) {
		perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], pod)
	}
	for n, pods := range perNode {
		if len(pods) == 1 {
			return n, pods[0]
		}
	}
	t.Fatalf("no node hosts exactly one member: %v", perNode)
	return "", ""
}

// TestNodeDown: a node hosting one member dies (heartbeats stop, its processes are
// killed). Once kube-controller-manager evicts the pod, the operator replaces the
// member on a live node.
func TestNodeDown(t *testing.T) {
	e := framework.Setup(t)
	const name = "nodedown"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 90*time.Second)

	node, victim := nodeOfOneMember(t, e, name)
	gone := memberByName(t, e, name, victim)
	load := e.StartLoad(name, loadRate)
	mon := monitorMembership(e, name)

	flowing(t, load, 2*loadRate)
	if err := e.Bench.Faults().NodeDown(node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Bench.Faults().NodeUp(node) })
	down := time.Now()
	waitReplaced(t, e, name, gone.ID, victim, 3, 150*time.Second)
	t.Logf("node down → replaced and healthy in %v", time.Since(down).Round(time.Second))
	flowing(t, load, 2*loadRate)
	mon.finish().checkOneAtATime(t, 3)
	verifyLoad(t, load)
	for pod, p := range e.MemberPods(name) {
		if pod != victim && p.Spec.NodeName == node {
			t.Errorf("replacement %s was placed on the dead node %s", pod, node)
		}
	}

	// The node comes back: the evicted pod finishes terminating and nothing else changes.
	before, err := e.Members(name)
	if err != nil || len(before) == 0 {
		t.Fatalf("members before the node came back: %v (%v)", before, err)
	}
	if err := e.Bench.Faults().NodeUp(node); err != nil {
		t.Fatal(err)
	}
	e.Eventually(60*time.Second, "the evicted pod deleted after the node returned", func() error {
		if _, ok := e.MemberPods(name)[victim]; ok {
			return fmt.Errorf("pod %s still exists", victim)
		}
		return nil
	})
	e.WaitAvailable(name, 3, 60*time.Second)
	after, err := e.Members(name)
	if err != nil {
		t.Fatalf("members after the node came back: %v", err)
	}
	if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
		t.Errorf("membership changed when the node came back: %v → %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}
}

// TestRollingUpgrade moves a 3-member cluster from 3.6.16 to 3.7.3 under load: each
// member restarted in place (same member ID), followers before the leader, leadership
// moved away before the leader restarts, at most one election that the operator did not
// ask for. No EtcdBackup names the cluster, so before the step the operator backs it up
// into a claim it creates and owns (the claim fallback, recorded in status). Then, still
// under the same load, the cluster goes back down to 3.6.16 through etcd's downgrade
// API, with a new backup on a new claim and the older claim deleted. Over both steps no
// write fails and no acknowledged write is lost.
func TestRollingUpgrade(t *testing.T) {
	e := framework.Setup(t)
	const name = "upgrade"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 90*time.Second)
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	sts := waitAllAnswer(e, name, 3, 30*time.Second)
	leader0, _ := waitLeader(t, e, name)
	term0 := maxTerm(sts)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)

	// Record the order in which pods are switched to the new version, and whether the
	// status ever showed the upgrade in progress.
	var order []string
	sawInProgress := false
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = "3.7.3" })
	e.Eventually(180*time.Second, "every member reports 3.7.3", func() error {
		c := e.Cluster(name)
		if c.Status.TargetVersion == "3.7.3" && c.Status.CurrentVersion == "3.6.16" {
			sawInProgress = true
		}
		for pod, p := range e.MemberPods(name) {
			if p.Annotations[render.AnnotationVersion] == "3.7.3" && !slices.Contains(order, pod) {
				order = append(order, pod)
			}
		}
		return membersRun(e, name, 3, "3.7.3")
	})
	c := e.WaitAvailable(name, 3, 60*time.Second)
	e.Eventually(30*time.Second, "status currentVersion 3.7.3", func() error {
		c = e.Cluster(name)
		if c.Status.CurrentVersion != "3.7.3" || c.Status.TargetVersion != "" {
			return fmt.Errorf("currentVersion=%q targetVersion=%q", c.Status.CurrentVersion, c.Status.TargetVersion)
		}
		return nil
	})
	flowing(t, load, 2*loadRate)
	sts = waitAllAnswer(e, name, 3, 30*time.Second)
	elections := maxTerm(sts) - term0

	t.Logf("upgrade order %v (leader was %s), elections %d", order, leader0, elections)
	if !sawInProgress {
		t.Errorf("status never showed targetVersion 3.7.3 with currentVersion 3.6.16")
	}
	if len(order) != 3 || order[2] != leader0 {
		t.Errorf("upgrade order %v: the leader %s must be last", order, leader0)
	}
	if !framework.HasAny(e.EventReasons(name), "LeaderMoved") {
		t.Errorf("leadership was not moved before the leader restarted: events %v", e.EventReasons(name))
	}
	// One election is the planned MoveLeader; at most one more is tolerated.
	if elections > 2 {
		t.Errorf("%d elections during the upgrade: more than 1 unplanned", elections)
	}
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
		t.Errorf("members replaced during an in-place upgrade: %v → %v", framework.MemberIDs(before), framework.MemberIDs(after))
	}
	for pod, p := range e.MemberPods(name) {
		for _, ctr := range p.Spec.Containers {
			if ctr.Name == render.ContainerName && ctr.Image != render.Image(c.Spec, "3.7.3") {
				t.Errorf("%s image %s", pod, ctr.Image)
			}
		}
	}
	up := requireClaimBackup(t, e, name, "3.6.16", "3.7.3") // upgrade_backup_test.go

	// And back down, under the same load (downgrade_test.go).
	downgradeUnderLoad(t, e, name, 3, "3.6.16", load)
	down := requireClaimBackup(t, e, name, "3.7.3", "3.6.16")
	if down.Claim == up.Claim {
		t.Errorf("the downgrade's backup went to the upgrade's claim %s", up.Claim)
	}
	// Only the newest snapshot's claim is kept: the upgrade's goes, with its EtcdBackup.
	e.Eventually(60*time.Second, "the upgrade's claim "+up.Claim+" deleted", func() error {
		ctx := context.Background()
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: up.Claim}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("claim %s: %v", up.Claim, err)
		}
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: up.Backup}, &etcdv1beta2.EtcdBackup{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("EtcdBackup %s: %v", up.Backup, err)
		}
		return nil
	})
	verifyLoad(t, load)
}

// podFingerprint is what must not change while an upgrade is refused.
func podFingerprint(e *framework.Env, name string) map[string]string {
	out := map[string]string{}
	for pod, p := range e.MemberPods(name) {
		img := ""
		for _, ctr := range p.Spec.Containers {
			if ctr.Name == render.ContainerName {
				img = ctr.Image
			}
		}
		out[pod] = fmt.Sprintf("uid=%s image=%s version=%s restarts=%d", p.UID, img, p.Annotations[render.AnnotationVersion], etcdRestarts(p))
	}
	return out
}

func upgradeRefused(c *etcdv1beta2.EtcdCluster) (bool, string) {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionUpgrading {
			return cond.Status == corev1.ConditionFalse && cond.Reason == "UpgradeRefused", cond.Message
		}
	}
	return false, ""
}

// TestRefusedUpgrade: a skipped minor version (3.6 → 3.8) and a downgrade that skips a
// minor (3.7 → 3.5; etcd downgrades one minor at a time) are refused with a condition and
// a warning event, and no pod is touched (3.8.0 has no binary on the bench: touching a
// pod would break it).
func TestRefusedUpgrade(t *testing.T) {
	e := framework.Setup(t)
	cases := []struct{ cluster, from, to string }{
		{"skip", "3.6.16", "3.8.0"},
		{"down", "3.7.3", "3.5.36"},
	}
	for _, tc := range cases {
		c := newCluster(tc.cluster, 3)
		c.Spec.Version = tc.from
		e.Create(c)
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			e.WaitAvailable(tc.cluster, 3, 90*time.Second)
			ids, err := e.Members(tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			pods := podFingerprint(e, tc.cluster)
			e.Update(tc.cluster, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = tc.to })
			e.Eventually(30*time.Second, "upgrade refused in status", func() error {
				c := e.Cluster(tc.cluster)
				if ok, _ := upgradeRefused(c); !ok || c.Status.ObservedGeneration != c.Generation {
					return fmt.Errorf("conditions %+v", c.Status.Conditions)
				}
				if !framework.HasAny(e.EventReasons(tc.cluster), "UpgradeRefused", "DowngradeRefused") {
					return fmt.Errorf("no UpgradeRefused or DowngradeRefused event: %v", e.EventReasons(tc.cluster))
				}
				return nil
			})
			_, msg := upgradeRefused(e.Cluster(tc.cluster))
			t.Logf("refused: %s", msg)
			// Nothing may happen: watch for a while (longer than a reconcile round trip).
			deadline := time.Now().Add(8 * time.Second)
			for time.Now().Before(deadline) {
				if now := podFingerprint(e, tc.cluster); !maps.Equal(now, pods) {
					t.Fatalf("pods changed under a refused upgrade:\nbefore %v\nafter  %v", pods, now)
				}
				time.Sleep(500 * time.Millisecond)
			}
			c := e.Cluster(tc.cluster)
			if !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) || c.Status.CurrentVersion != tc.from {
				t.Errorf("status after refusal: %+v", c.Status)
			}
			now, err := e.Members(tc.cluster)
			if err != nil || !maps.Equal(framework.MemberIDs(ids), framework.MemberIDs(now)) {
				t.Errorf("membership changed: %v → %v (%v)", framework.MemberIDs(ids), framework.MemberIDs(now), err)
			}
			for pod, st := range e.MemberStatuses(tc.cluster) {
				if st.Version != tc.from {
					t.Errorf("%s runs %s", pod, st.Version)
				}
			}

			// Going back to the running version clears the refusal.
			e.Update(tc.cluster, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = tc.from })
			e.Eventually(30*time.Second, "refusal cleared", func() error {
				if ok, msg := upgradeRefused(e.Cluster(tc.cluster)); ok {
					return fmt.Errorf("still refused: %s", msg)
				}
				return nil
			})
		})
	}
}

// serializableMembers lists members as one member sees them, without a quorum.
func serializableMembers(ep string) (map[uint64]string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, err := cli.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return nil, err
	}
	out := map[uint64]string{}
	for _, m := range r.Members {
		out[m.ID] = m.Name
	}
	return out, nil
}

// TestQuorumLossFailedSafe takes down the nodes of 2 of 3 members. Without the opt-in
// the operator only reports the lost quorum (phase Failed, Available=False, a warning
// event) and destroys nothing: not the survivor, not the members it cannot reach, not
// even once their pods are evicted.
func TestQuorumLossFailedSafe(t *testing.T) {
	e := framework.Setup(t)
	const name = "quorum"
	c := newCluster(name, 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true} // one member per node
	c.Annotations = map[string]string{etcdcluster.AnnotationQuorumLossGrace: "15s"}
	e.Create(c)
	e.WaitAvailable(name, 3, 90*time.Second)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)
	verifyLoad(t, load)

	ids, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	pods := e.MemberPods(name)
	var names []string
	for n := range pods {
		names = append(names, n)
	}
	slices.Sort(names)
	survivor := names[0]
	survivorPod := pods[survivor]
	survivorEP := "http://" + net.JoinHostPort(survivorPod.Status.PodIP, strconv.Itoa(etcdv1beta2.EtcdClientPort))
	// The survivor has applied every acknowledged write before the fault (a follower may
	// lag by a heartbeat), so that what it holds afterwards can be checked exactly.
	acked := load.AckedKeys()
	e.Eventually(30*time.Second, "the survivor holds every acknowledged write", func() error {
		return holdsAll(survivorEP, acked)
	})
	var downed []string
	for _, n := range names[1:] {
		node := pods[n].Spec.NodeName
		if err := e.Bench.Faults().NodeDown(node); err != nil {
			t.Fatal(err)
		}
		downed = append(downed, node)
		t.Cleanup(func() { _ = e.Bench.Faults().NodeUp(node) })
	}
	t.Logf("survivor %s; nodes down %v", survivor, downed)

	e.Eventually(90*time.Second, "quorum loss reported", func() error {
		c := e.Cluster(name)
		if c.Status.Phase != etcdv1beta2.ClusterPhaseFailed || framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) {
			return fmt.Errorf("phase %s conditions %+v", c.Status.Phase, c.Status.Conditions)
		}
		if !framework.HasAny(e.EventReasons(name), "QuorumLost") {
			return fmt.Errorf("no QuorumLost event: %v", e.EventReasons(name))
		}
		return nil
	})
	t.Logf("reason: %s", e.Cluster(name).Status.Reason)
	// The evicted pods are the dangerous moment: their members look certainly gone.
	e.Eventually(60*time.Second, "the lost members' pods evicted", func() error {
		for _, n := range names[1:] {
			if p, ok := e.MemberPods(name)[n]; ok && p.DeletionTimestamp == nil {
				return fmt.Errorf("pod %s not evicted yet", n)
			}
		}
		return nil
	})
	checkUntouched := func() error {
		for n := range e.MemberPods(name) {
			if !slices.Contains(names, n) {
				return fmt.Errorf("pod %s was created", n)
			}
		}
		p, ok := e.MemberPods(name)[survivor]
		if !ok || p.UID != survivorPod.UID || p.DeletionTimestamp != nil || etcdRestarts(p) != etcdRestarts(survivorPod) {
			return fmt.Errorf("the survivor %s was touched", survivor)
		}
		ms, err := serializableMembers(survivorEP)
		if err != nil {
			return fmt.Errorf("survivor's member list: %v", err)
		}
		if !maps.Equal(ms, framework.MemberIDs(ids)) {
			return fmt.Errorf("membership changed: %v → %v", framework.MemberIDs(ids), ms)
		}
		if framework.HasAny(e.EventReasons(name), "MemberReplaced", "MemberRemoved", "MemberAdded", "PodDeleted", "ForceNewCluster") {
			return fmt.Errorf("destructive events: %v", e.EventReasons(name))
		}
		return nil
	}
	// Several reconciles (pod events, the 2 s retry) happen in this window.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := checkUntouched(); err != nil {
			e.DumpState()
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if c := e.Cluster(name); c.Status.Phase != etcdv1beta2.ClusterPhaseFailed {
		t.Errorf("phase %s after the quorum loss, want Failed", c.Status.Phase)
	}
	// Nothing acknowledged before the loss is gone from the survivor (read without a
	// quorum: serializable, from the survivor alone).
	if len(acked) == 0 {
		t.Fatal("the load acknowledged nothing before the fault")
	}
	if err := holdsAll(survivorEP, acked); err != nil {
		t.Errorf("after the quorum loss: %v", err)
	}
}

// holdsAll says whether the member at ep holds every key of want with its value.
func holdsAll(ep string, want map[string]string) error {
	got, err := serializableKeys(ep, framework.DefaultLoadPrefix)
	if err != nil {
		return err
	}
	missing := 0
	for k, v := range want {
		if got[k] != v {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d acknowledged writes missing or different on %s", missing, len(want), ep)
	}
	return nil
}

// serializableKeys reads every key under prefix from the one member at ep, without
// a quorum.
func serializableKeys(ep, prefix string) (map[string]string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable())
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(r.Kvs))
	for _, kv := range r.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out, nil
}

// TestOperatorKilledBetweenReplaceSteps deletes a member pod and stops the operator
// right after every step of the replacement (a failpoint: the step is done, the status
// after it is not written), then starts a new one. Each new operator must resume from
// what it observes: no duplicate member, no second learner, no orphan pod, no lost write.
func TestOperatorKilledBetweenReplaceSteps(t *testing.T) {
	e := framework.Setup(t)
	const name = "resume"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 90*time.Second)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)
	mon := monitorMembership(e, name)

	// The hook is installed while no reconciler runs, so no reconcile races with it.
	steps := make(chan string, 16)
	e.StopOperatorNow()
	e.AfterAction = func(ctx context.Context, cluster string, a planner.Action) {
		switch a.Kind {
		case planner.ReplaceMember, planner.RemoveMember, planner.AddLearner, planner.CreatePod,
			planner.PromoteLearner, planner.DeletePod, planner.MoveLeader:
		default:
			return
		}
		if cluster != "default/"+name {
			return
		}
		steps <- a.String()
		<-ctx.Done() // "killed": nothing after the step runs until the operator stops
	}
	t.Cleanup(func() {
		e.StopOperatorNow()
		e.AfterAction = nil
	})
	e.StartOperator()

	pods := e.MemberPods(name)
	var victim string
	for n := range pods {
		victim = n
		break
	}
	gone := memberByName(t, e, name, victim)
	p := pods[victim]
	if err := e.C.Delete(context.Background(), &p); err != nil {
		t.Fatal(err)
	}

	var done []string
	deadline := time.After(4 * time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	// The loop ends on the promotion's report, not on the poll seeing three voters: the
	// poll can see the promotion applied while the operator's MemberPromote call has not
	// returned, and stopping the operator then cancels that call, so the step ends in an
	// error, the hook never reports it and no later operator promotes again (CI saw
	// exactly that). Only the hook's report cancels an operator here, and the hook runs
	// after a step returned.
	for replaced := false; !replaced || !stepReported(done, "PromoteLearner"); {
		select {
		case s := <-steps:
			done = append(done, s)
			t.Logf("operator stopped after %s", s)
			e.StopOperatorNow()
			e.StartOperator()
		case <-tick.C:
			ms, err := e.Members(name)
			if err != nil {
				continue
			}
			voters := 0
			for _, m := range ms {
				if !m.IsLearner && m.Name != "" && m.ID != gone.ID {
					voters++
				}
			}
			replaced = voters == 3 && len(ms) == 3
		case <-deadline:
			e.DumpState()
			t.Fatalf("not replaced; steps done: %v", done)
		}
	}
	// The operator started after the promotion's report may hold a reconcile in the
	// hook after a later step. Stop it, collect what it reported, and let a hook-free
	// one finish the job.
	e.StopOperatorNow()
	for drained := false; !drained; {
		select {
		case s := <-steps:
			done = append(done, s)
			t.Logf("operator stopped after %s", s)
		default:
			drained = true
		}
	}
	e.AfterAction = nil
	e.StartOperator()
	e.WaitAvailable(name, 3, 90*time.Second)
	waitAllAnswer(e, name, 3, 30*time.Second)
	flowing(t, load, 2*loadRate)
	mon.finish().checkOneAtATime(t, 3)
	verifyLoad(t, load)
	// Remove, add learner, promote: each at least once, each interrupted.
	for _, k := range []string{"ReplaceMember", "AddLearner", "PromoteLearner"} {
		if !stepReported(done, k) {
			t.Errorf("no interrupted %s step: %v", k, done)
		}
	}
	e.Eventually(30*time.Second, "no orphan pod", func() error {
		ps := e.MemberPods(name)
		if len(ps) != 3 {
			return fmt.Errorf("%d member pods, want 3", len(ps))
		}
		ms, err := e.Members(name)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if _, ok := ps[m.Name]; !ok {
				return fmt.Errorf("member %s has no pod", m.Name)
			}
		}
		return nil
	})
}

// stepReported: one of the steps an AfterAction hook reported (each a planner action's
// String, which begins with its kind) is of the given kind.
func stepReported(reported []string, kind string) bool {
	return slices.ContainsFunc(reported, func(s string) bool { return strings.HasPrefix(s, kind) })
}
