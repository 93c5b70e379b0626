package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// takeoverCase is one CoreOS-made cluster and what is done to it before our operator
// starts.
type takeoverCase struct {
	name string
	size int
	// halfStatus overwrites CoreOS's status with one its operator left half-written
	// (stopped while scaling up: no member list, no version, no service).
	halfStatus bool
	// killOne kills one member's etcd before the takeover; CoreOS pods never restart,
	// so its pod ends Failed and the member is dead.
	killOne bool
}

// takeoverState is what a CoreOS-made cluster looked like just before the takeover.
type takeoverState struct {
	cc        *coreOSCluster
	clusterID uint64
	memberIDs map[string]uint64 // member name -> ID
	pods      map[string]podIdentity
	dead      string // the member killed before the takeover, if any
	load      *framework.Load
}

// podIdentity tells a pod that was deleted and recreated, or whose etcd restarted,
// from the one that was there.
type podIdentity struct {
	uid, containerID string
}

// TestTakeoverOfCoreOSClusters creates clusters exactly as CoreOS etcd-operator 0.9.4
// made them (its operator never runs), with keys and a writer on each, then starts our
// operator: every cluster is adopted — the same etcd cluster, every acknowledged write
// present, no healthy member removed, no pod deleted or restarted, status rebuilt from
// what etcd answers — and SpecApplied=False names the CoreOS pod shape.
func TestTakeoverOfCoreOSClusters(t *testing.T) {
	e := framework.Setup(t)
	e.StopOperatorNow() // CoreOS's operator made these clusters; ours must not run meanwhile
	pushCoreOSImages(t, e)

	cases := []takeoverCase{
		{name: "co1", size: 1},
		{name: "co3", size: 3},
		{name: "half", size: 3, halfStatus: true},
		{name: "dead5", size: 5, killOne: true},
	}
	states := map[string]*takeoverState{}
	for _, tc := range cases {
		states[tc.name] = prepareCoreOSCluster(t, e, tc)
	}

	e.StartOperator()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := states[tc.name]
			c := waitAdopted(t, e, tc, st)
			if tc.killOne {
				checkDeadReplaced(t, e, tc, st)
			} else {
				checkUntouched(t, e, st)
			}
			checkSpecAppliedNamesCoreOSShape(t, c)
			res, err := st.load.Verify(context.Background())
			t.Logf("load on %s: %v", tc.name, res)
			if err != nil {
				t.Error(err)
			}
			if !tc.killOne && res.Failed > 0 {
				t.Errorf("%d writes failed during the adoption of a healthy cluster: %v", res.Failed, res)
			}
			checkKeys(t, e, tc.name)
			// TODO(reconf): once the rolling reconfiguration rule (branch h6-reconf) is
			// merged, the adopted members are moved onto pods of our shape one at a time.
			// Assert here, for every case: eventually no pod has restartPolicy Never or a
			// check-dns init container, SpecApplied=True, the same cluster ID, every
			// acknowledged write present, and writes failing for at most one election at
			// a time (the load's worst latency), and drop checkUntouched's "no pod
			// deleted" above, which only holds until then.
		})
	}
}

// prepareCoreOSCluster creates the cluster as CoreOS did, writes keys, starts a writer
// and records what the takeover must not change.
func prepareCoreOSCluster(t *testing.T, e *framework.Env, tc takeoverCase) *takeoverState {
	t.Helper()
	cc := createCoreOSCluster(t, e, tc.name, tc.size)
	cli := e.EtcdClient(tc.name)
	writeKeys(e, cli, 50, "coreos", tc.name+"-")
	st := &takeoverState{cc: cc, memberIDs: map[string]uint64{}, pods: map[string]podIdentity{}}
	for name, ms := range e.MemberStatuses(tc.name) {
		st.memberIDs[name] = ms.ID
	}
	members, err := e.Members(tc.name)
	if err != nil || len(members) != tc.size {
		t.Fatalf("%s: members %v, %v", tc.name, members, err)
	}
	st.clusterID = clusterIDOf(t, e, tc.name)
	if tc.halfStatus {
		updateStatus(t, e, tc.name, func(s *etcdv1beta2.EtcdClusterStatus) {
			*s = etcdv1beta2.EtcdClusterStatus{
				Phase: etcdv1beta2.ClusterPhaseRunning, Size: 1,
				Conditions: []etcdv1beta2.ClusterCondition{{
					Type: etcdv1beta2.ClusterConditionScaling, Status: corev1.ConditionTrue,
					Reason: "Scaling up", Message: fmt.Sprintf("Current cluster size: 1, desired cluster size: %d", tc.size),
				}},
			}
		})
	}
	st.load = e.StartLoad(tc.name, 10)
	if err := st.load.WaitAcked(20, time.Minute); err != nil {
		t.Fatal(err)
	}
	if tc.killOne {
		st.dead = cc.Members[len(cc.Members)-1]
		if err := e.Bench.Faults().KillPod("default", st.dead, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		e.Eventually(time.Minute, st.dead+" failed", func() error {
			p := e.MemberPods(tc.name)[st.dead]
			if p.Status.Phase != corev1.PodFailed {
				return fmt.Errorf("phase %s", p.Status.Phase)
			}
			return nil
		})
	}
	for name, p := range e.MemberPods(tc.name) {
		st.pods[name] = identityOf(p)
	}
	return st
}

func identityOf(p corev1.Pod) podIdentity {
	id := podIdentity{uid: string(p.UID)}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "etcd" {
			id.containerID = cs.ContainerID
		}
	}
	return id
}

// clusterIDOf is the cluster ID a member answers.
func clusterIDOf(t *testing.T, e *framework.Env, name string) uint64 {
	t.Helper()
	cli := e.EtcdClient(name)
	var id uint64
	e.Eventually(30*time.Second, "cluster ID of "+name, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		id = r.Header.ClusterId
		return nil
	})
	return id
}

// waitAdopted waits until status is rebuilt from what runs: formed, the same cluster
// ID, Running, Available, and every live member in members.ready.
func waitAdopted(t *testing.T, e *framework.Env, tc takeoverCase, st *takeoverState) *etcdv1beta2.EtcdCluster {
	t.Helper()
	var c *etcdv1beta2.EtcdCluster
	e.Eventually(3*time.Minute, tc.name+" adopted", func() error {
		c = e.Cluster(tc.name)
		s := c.Status
		if !s.Bootstrapped || s.ClusterID != etcdadmin.FormatID(st.clusterID) {
			return fmt.Errorf("bootstrapped %v, clusterID %q (want %x)", s.Bootstrapped, s.ClusterID, st.clusterID)
		}
		if s.Phase != etcdv1beta2.ClusterPhaseRunning || !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) {
			return fmt.Errorf("phase %q, conditions %+v", s.Phase, s.Conditions)
		}
		if tc.killOne {
			if len(s.Members.Ready) != tc.size || slices.Contains(s.Members.Ready, st.dead) {
				return fmt.Errorf("members %+v: waiting for the dead member's replacement", s.Members)
			}
		} else if want := sortedNames(st.cc.Members); !slices.Equal(s.Members.Ready, want) {
			return fmt.Errorf("members.ready %v, want %v", s.Members.Ready, want)
		}
		if s.ServiceName != tc.name+"-client" || s.ClientPort != 2379 || s.CurrentVersion != coreOSEtcdVersion || s.Size != tc.size {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	if got := clusterIDOf(t, e, tc.name); got != st.clusterID {
		t.Errorf("cluster ID %x after the takeover, was %x", got, st.clusterID)
	}
	return c
}

// checkUntouched: no member removed or added, no pod deleted, recreated or restarted,
// after a window of acknowledged writes past the adoption.
func checkUntouched(t *testing.T, e *framework.Env, st *takeoverState) {
	t.Helper()
	if err := st.load.WaitAcked(100, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	members, err := e.Members(st.cc.Name)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, m := range members {
		got[m.Name] = m.ID
		if m.IsLearner {
			t.Errorf("member %s is a learner", m.Name)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(st.memberIDs) {
		t.Errorf("members %v after the takeover, were %v", got, st.memberIDs)
	}
	pods := e.MemberPods(st.cc.Name)
	if len(pods) != len(st.pods) {
		t.Errorf("%d pods after the takeover, were %d", len(pods), len(st.pods))
	}
	for name, was := range st.pods {
		p, ok := pods[name]
		if !ok {
			t.Errorf("pod %s is gone", name)
			continue
		}
		if now := identityOf(p); now != was || p.DeletionTimestamp != nil {
			t.Errorf("pod %s was recreated, restarted or is being deleted: %+v, was %+v", name, now, was)
		}
	}
}

// checkDeadReplaced: the dead member is replaced by the usual rules, the live members
// and their pods untouched.
func checkDeadReplaced(t *testing.T, e *framework.Env, tc takeoverCase, st *takeoverState) {
	t.Helper()
	members, err := e.Members(tc.name)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]uint64{}
	for _, m := range members {
		byName[m.Name] = m.ID
	}
	if _, ok := byName[st.dead]; ok || len(members) != tc.size {
		t.Errorf("members %v: want %d, without the dead %s", byName, tc.size, st.dead)
	}
	pods := e.MemberPods(tc.name)
	for name, id := range st.memberIDs {
		if name == st.dead {
			continue
		}
		if byName[name] != id {
			t.Errorf("live member %s: ID %x, was %x", name, byName[name], id)
		}
		if p, ok := pods[name]; !ok || identityOf(p) != st.pods[name] {
			t.Errorf("live member %s's pod was deleted or restarted", name)
		}
	}
}

func checkSpecAppliedNamesCoreOSShape(t *testing.T, c *etcdv1beta2.EtcdCluster) {
	t.Helper()
	for _, cond := range c.Status.Conditions {
		if cond.Type != etcdv1beta2.ClusterConditionSpecApplied {
			continue
		}
		if cond.Status != corev1.ConditionFalse || !strings.Contains(cond.Message, "created by CoreOS etcd-operator") {
			t.Errorf("SpecApplied %s %q: want False naming the CoreOS pod shape", cond.Status, cond.Message)
		}
		return
	}
	t.Errorf("no SpecApplied condition: %+v", c.Status.Conditions)
}

// checkKeys: the keys written before the takeover are all there.
func checkKeys(t *testing.T, e *framework.Env, name string) {
	t.Helper()
	cli := e.EtcdClient(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "coreos/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 50 {
		t.Errorf("%d of the 50 keys written before the takeover are there", len(r.Kvs))
	}
	for _, kv := range r.Kvs {
		if !strings.HasPrefix(string(kv.Value), name+"-") {
			t.Errorf("key %s = %q", kv.Key, kv.Value)
		}
	}
}

func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}
