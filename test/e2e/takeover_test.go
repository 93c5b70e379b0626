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
	// version is the etcd the cluster runs; empty: coreOSEtcdVersion.
	version string
}

func (tc takeoverCase) etcdVersion() string {
	if tc.version == "" {
		return coreOSEtcdVersion
	}
	return tc.version
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
// operator: every cluster is adopted — the same etcd cluster, status rebuilt from what
// etcd answers, SpecApplied=False naming the CoreOS pod shape — and then moved onto pods
// of our shape one member at a time (a learner of ours added and promoted before each
// CoreOS member is removed, so redundancy never drops), keeping the cluster ID, every
// acknowledged write and every key.
//
// The clusters come in two waves, each adopted and moved at once by a freshly started
// operator, the first wave's clusters deleted before the second is made: all five at
// once put ~20 etcd members on the bench's shared cores mid-move, and a leader starved
// of CPU for 15 s failed a write (measured: load average 52, leaders logging missed
// heartbeats; one write of 1,696 failed in a CI run). Each wave peaks at ~10 members.
func TestTakeoverOfCoreOSClusters(t *testing.T) {
	e := framework.Setup(t)
	e.StopOperatorNow() // CoreOS's operator made these clusters; ours must not run meanwhile
	pushCoreOSImages(t, e)

	waves := [][]takeoverCase{{
		{name: "co1", size: 1},
		{name: "co3", size: 3},
		{name: "half", size: 3, halfStatus: true},
	}, {
		{name: "dead5", size: 5, killOne: true},
		// The oldest etcd this operator runs, as CoreOS users still on it have it.
		{name: "co35", size: 3, version: etcd35},
	}}
	for i, cases := range waves {
		if i > 0 {
			// The next wave's clusters are CoreOS's: our operator stops before they exist.
			deleteTakenOver(t, e, waves[i-1])
			e.StopOperatorNow()
		}
		takeOver(t, e, cases)
	}
}

// takeOver makes the CoreOS clusters of cases while our operator is stopped, starts it,
// and checks each cluster was adopted and moved with nothing lost.
func takeOver(t *testing.T, e *framework.Env, cases []takeoverCase) {
	t.Helper()
	states := map[string]*takeoverState{}
	monitors := map[string]*membershipMonitor{}
	for _, tc := range cases {
		states[tc.name] = prepareCoreOSCluster(t, e, tc)
	}
	for _, tc := range cases {
		monitors[tc.name] = monitorMembership(e, tc.name)
	}

	e.StartOperator()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := states[tc.name]
			waitAdopted(t, e, tc, st)
			waitMovedToOurShape(t, e, tc, st)
			checkMoveKeptRedundancy(t, tc, monitors[tc.name].finish())
			// Writes go on after the move, not only before it.
			if err := st.load.WaitAcked(20, time.Minute); err != nil {
				t.Errorf("%s after the move: %v", tc.name, err)
			}
			res, err := st.load.Verify(context.Background())
			t.Logf("load on %s: %v", tc.name, res)
			if err != nil {
				t.Error(err)
			}
			if !tc.killOne && res.Failed > 0 {
				t.Errorf("%d writes failed while a healthy cluster was adopted and moved: %v", res.Failed, res)
			}
			checkKeys(t, e, tc.name)
		})
	}
}

// deleteTakenOver deletes the clusters of cases and waits until their pods are gone, so
// the next wave does not share the bench's cores with them.
func deleteTakenOver(t *testing.T, e *framework.Env, cases []takeoverCase) {
	t.Helper()
	for _, tc := range cases {
		if err := e.C.Delete(context.Background(), e.Cluster(tc.name)); err != nil {
			t.Fatal(err)
		}
	}
	e.Eventually(3*time.Minute, "the deleted wave's member pods gone", func() error {
		for _, tc := range cases {
			pods, err := e.ListMemberPods(tc.name)
			if err != nil {
				return err
			}
			if len(pods) > 0 {
				return fmt.Errorf("%s: %d member pods left", tc.name, len(pods))
			}
		}
		return nil
	})
}

func prepareCoreOSCluster(t *testing.T, e *framework.Env, tc takeoverCase) *takeoverState {
	t.Helper()
	cc := createCoreOSCluster(t, e, tc.name, tc.size, tc.etcdVersion())
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
func waitAdopted(t *testing.T, e *framework.Env, tc takeoverCase, st *takeoverState) {
	t.Helper()
	// The clusters are adopted and moved at the same time while the subtests look at them
	// one after another, so a cluster may already be on our pods when its turn comes: the
	// adoption is proven by the AdoptedCoreOSCluster event and the same cluster ID, and
	// SpecApplied naming the CoreOS shape is required only while a CoreOS pod runs.
	e.Eventually(3*time.Minute, tc.name+" adopted", func() error {
		c := e.Cluster(tc.name)
		s := c.Status
		if !s.Bootstrapped || s.ClusterID != etcdadmin.FormatID(st.clusterID) {
			return fmt.Errorf("bootstrapped %v, clusterID %q (want %x)", s.Bootstrapped, s.ClusterID, st.clusterID)
		}
		if s.Phase != etcdv1beta2.ClusterPhaseRunning || s.ServiceName != tc.name+"-client" || s.ClientPort != 2379 || s.CurrentVersion != tc.etcdVersion() {
			return fmt.Errorf("status %+v", s)
		}
		if !slices.Contains(e.EventReasons(tc.name), etcdv1beta2.EventReasonAdoptedCoreOSCluster) {
			return fmt.Errorf("no %s event yet", etcdv1beta2.EventReasonAdoptedCoreOSCluster)
		}
		for name := range e.MemberPods(tc.name) {
			if _, coreos := st.memberIDs[name]; coreos && name != st.dead {
				return specAppliedNamesCoreOSShape(c)
			}
		}
		return nil
	})
	if got := clusterIDOf(t, e, tc.name); got != st.clusterID {
		t.Errorf("cluster ID %x after the takeover, was %x", got, st.clusterID)
	}
}

// waitMovedToOurShape: every CoreOS member replaced by a pod of ours (restartPolicy
// Always, no check-dns init container), the cluster at its size with no learner left,
// Available, SpecApplied=True, and still the same etcd cluster.
func waitMovedToOurShape(t *testing.T, e *framework.Env, tc takeoverCase, st *takeoverState) {
	t.Helper()
	e.Eventually(time.Duration(tc.size)*150*time.Second, tc.name+" moved onto pods of our shape", func() error {
		pods := e.MemberPods(tc.name)
		for name, p := range pods {
			if _, coreos := st.memberIDs[name]; coreos || p.Spec.RestartPolicy == corev1.RestartPolicyNever || len(p.Spec.InitContainers) > 0 && p.Spec.InitContainers[0].Name == "check-dns" {
				return fmt.Errorf("pod %s is still CoreOS's", name)
			}
		}
		if len(pods) != tc.size {
			return fmt.Errorf("%d member pods, want %d", len(pods), tc.size)
		}
		members, err := e.Members(tc.name)
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.IsLearner {
				return fmt.Errorf("member %x is still a learner", m.ID)
			}
		}
		if len(members) != tc.size {
			return fmt.Errorf("%d members, want %d", len(members), tc.size)
		}
		c := e.Cluster(tc.name)
		if !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) || !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionSpecApplied) {
			return fmt.Errorf("conditions %+v", c.Status.Conditions)
		}
		return nil
	})
	if got := clusterIDOf(t, e, tc.name); got != st.clusterID {
		t.Errorf("cluster ID %x after the move, was %x", got, st.clusterID)
	}
	// The move changes the pods' shape, never etcd's version.
	requireVersion(t, e, tc.name, tc.size, tc.etcdVersion())
}

// checkMoveKeptRedundancy: at no sample did the cluster have fewer voters than its size
// (a dead member counts until it is replaced, which removes it first), nor more than one
// learner: each CoreOS member went only after its replacement was a voter.
func checkMoveKeptRedundancy(t *testing.T, tc takeoverCase, mon *membershipMonitor) {
	t.Helper()
	mon.mu.Lock()
	defer mon.mu.Unlock()
	minVoters := tc.size
	if tc.killOne {
		minVoters = tc.size - 1
	}
	t.Logf("%s membership samples=%d minVoters=%d maxLearners=%d maxMembers=%d", tc.name, mon.samples, mon.minVoters, mon.maxLearners, mon.maxMembers)
	if mon.samples == 0 || mon.minVoters < minVoters || mon.maxLearners > 1 || mon.maxMembers > tc.size+1 {
		t.Errorf("%s: redundancy dropped or changes overlapped: minVoters=%d (want ≥ %d) maxLearners=%d maxMembers=%d",
			tc.name, mon.minVoters, minVoters, mon.maxLearners, mon.maxMembers)
	}
}

func specAppliedNamesCoreOSShape(c *etcdv1beta2.EtcdCluster) error {
	for _, cond := range c.Status.Conditions {
		if cond.Type != etcdv1beta2.ClusterConditionSpecApplied {
			continue
		}
		if cond.Status != corev1.ConditionFalse || !strings.Contains(cond.Message, "created by CoreOS etcd-operator") {
			return fmt.Errorf("SpecApplied %s %q: want False naming the CoreOS pod shape", cond.Status, cond.Message)
		}
		return nil
	}
	return fmt.Errorf("no SpecApplied condition: %+v", c.Status.Conditions)
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
