package benchmark

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// BenchmarkChaosAtScale is issue 16's "bad day": CHAOS_CLUSTERS (default 5) 3-member
// clusters, one member per node on 4 nodes, each under its own writer (CHAOS_RATE puts/s,
// default 20), take CHAOS_FAULTS (default 50) faults one after the other, chosen by
// CHAOS_SEED (default 16; printed, and the same seed replays the same sequence of
// fault kinds, clusters and member positions):
//
//   - kill-member / kill-leader: SIGKILL of a member's etcd (the kubelet restarts it);
//   - sigstop: a member frozen for 20 s, far longer than an election;
//   - delete-pod: a member's pod deleted (no claim: the member is replaced);
//   - node-down: a node powered off (a member of every cluster on it), up again once
//     every cluster is whole without it;
//   - node-partition: a node's network cut for 30 s, everything on it still running;
//   - dns-delay: a member's pod deleted while new member names stay unresolvable 20 s;
//   - operator-kill: a member's pod deleted, and the operator killed as soon as the
//     membership starts to change (mid-step), then started again;
//   - apiserver-restart: kube-apiserver stopped and started again.
//
// After each fault every cluster must be back at full size and healthy within
// chaosRecoveryBound; the time until then is the fault's recovery time (reported: median
// and worst, per run). Throughout, a monitor samples every cluster's membership each
// second and records any member removed while it was healthy (answering, its pod Ready,
// and no fault aimed at it), more than one learner at a time, or more members than size+1
// (more than one replacement at a time). At the end every acknowledged write of every
// writer must be in its cluster. Not part of the default test run: about 40 s a fault.
//
//	CHAOS_SEED=16 go test -run '^$' -bench BenchmarkChaosAtScale -benchtime=1x -timeout 90m ./test/benchmark -v
func BenchmarkChaosAtScale(b *testing.B) {
	clusters := envInt("CHAOS_CLUSTERS", 5)
	faults := envInt("CHAOS_FAULTS", 50)
	rate := envInt("CHAOS_RATE", 20)
	seed := int64(envInt("CHAOS_SEED", 16))
	b.Logf("CHAOS_SEED=%d CHAOS_CLUSTERS=%d CHAOS_FAULTS=%d CHAOS_RATE=%d", seed, clusters, faults, rate)
	rng := rand.New(rand.NewSource(seed))

	e := framework.SetupWithOptions(b, bench.Options{Nodes: 4})
	var names []string
	for i := range clusters {
		names = append(names, fmt.Sprintf("chaos%d", i+1))
	}
	for _, name := range names {
		e.Create(&etcdv1beta2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16",
				Pod: &etcdv1beta2.PodPolicy{AntiAffinity: true}},
		})
	}
	for _, name := range names {
		if err := waitHealthy(e, name, 3, 5*time.Minute); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
	}
	loads := map[string]*framework.Load{}
	for _, name := range names {
		loads[name] = e.StartLoad(name, rate)
	}
	for _, name := range names {
		if err := loads[name].WaitAcked(2*rate, time.Minute); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
	}
	mon := startChaosMonitor(e, names, 3)

	kinds := []string{"kill-member", "kill-leader", "sigstop", "delete-pod", "node-down",
		"node-partition", "dns-delay", "operator-kill", "apiserver-restart"}
	var recoveries []time.Duration
	perKind := map[string][]time.Duration{}
	var failure error
	for i := 0; i < faults*b.N && failure == nil; i++ {
		kind := kinds[rng.Intn(len(kinds))]
		name := names[rng.Intn(len(names))]
		pods := liveMemberPods(b, e, name)
		pod := pods[rng.Intn(len(pods))]
		what := fmt.Sprintf("fault %d/%d: %s on %s/%s", i+1, faults*b.N, kind, name, pod)
		start := time.Now()
		failure = injectScaleFault(b, e, mon, names, kind, name, pod)
		for _, n := range names {
			if failure != nil {
				break
			}
			failure = waitHealthy(e, n, 3, chaosRecoveryBound)
			if failure != nil {
				failure = fmt.Errorf("%s: %w", n, failure)
			}
		}
		if failure != nil {
			failure = fmt.Errorf("%s: %w", what, failure)
			break
		}
		took := time.Since(start)
		recoveries = append(recoveries, took)
		perKind[kind] = append(perKind[kind], took)
		mon.faultDone()
		b.Logf("%s: every cluster healthy after %v", what, took.Round(100*time.Millisecond))
	}
	mon.stop()

	// Every writer still gets writes acknowledged after the last fault: a load that
	// stalled would otherwise verify only what it wrote before.
	stalled := 0
	for _, name := range names {
		if err := loads[name].WaitAcked(rate, time.Minute); err != nil {
			stalled++
			b.Errorf("%s after the faults: %v", name, err)
		}
	}
	b.ReportMetric(float64(stalled), "stalled-writers")

	lost, failed := 0, 0
	for _, name := range names {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := loads[name].Verify(ctx)
		cancel()
		failed += res.Failed
		if err != nil {
			lost++
			b.Errorf("%s: %v", name, err)
		}
		b.Logf("%s load: %s", name, res)
	}
	if failed > 0 {
		b.Errorf("%d writes failed despite the clients' retries", failed)
	}
	viol := mon.violations()
	for _, v := range viol {
		b.Errorf("monitor: %s", v)
	}
	b.ReportMetric(float64(len(recoveries)), "faults-survived")
	b.ReportMetric(float64(faults*b.N), "faults")
	b.ReportMetric(float64(failed), "failed-writes")
	b.ReportMetric(float64(lost), "clusters-losing-writes")
	b.ReportMetric(float64(len(viol)), "monitor-violations")
	if len(recoveries) > 0 {
		b.ReportMetric(percentile(recoveries, 50).Seconds(), "recovery-p50-s")
		b.ReportMetric(percentile(recoveries, 100).Seconds(), "recovery-max-s")
	}
	kindNames := make([]string, 0, len(perKind))
	for k := range perKind {
		kindNames = append(kindNames, k)
	}
	sort.Strings(kindNames)
	for _, k := range kindNames {
		d := perKind[k]
		b.Logf("recovery %-18s n=%-3d median %6.1fs worst %6.1fs", k, len(d), percentile(d, 50).Seconds(), percentile(d, 100).Seconds())
	}
	b.Logf("replay with CHAOS_SEED=%d CHAOS_CLUSTERS=%d CHAOS_FAULTS=%d CHAOS_RATE=%d", seed, clusters, faults, rate)
	if failure != nil {
		e.DumpState()
		b.Fatal(failure)
	}
}

// chaosRecoveryBound is how long every cluster may take to be whole again after one
// fault. The slowest faults (a node powered off or cut off) wait out the control plane's
// node timeouts before their members can be replaced.
const chaosRecoveryBound = 5 * time.Minute

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func injectScaleFault(b *testing.B, e *framework.Env, mon *chaosMonitor, names []string, kind, name, pod string) error {
	k := e.Bench.Faults()
	switch kind {
	case "kill-member":
		mon.aimedAt(name, pod)
		return k.KillPod("default", pod, syscall.SIGKILL)
	case "kill-leader":
		for p, st := range e.MemberStatuses(name) {
			if st.Leader != 0 && st.Leader == st.ID {
				mon.aimedAt(name, p)
				return k.KillPod("default", p, syscall.SIGKILL)
			}
		}
		return fmt.Errorf("no leader found in %s", name)
	case "sigstop":
		mon.aimedAt(name, pod)
		if err := k.StopPod("default", pod); err != nil {
			return err
		}
		time.Sleep(20 * time.Second) // the fault's duration, not a synchronisation
		return k.ContinuePod("default", pod)
	case "delete-pod":
		mon.aimedAt(name, pod)
		p := e.MemberPods(name)[pod]
		return e.C.Delete(context.Background(), &p)
	case "node-down":
		node := e.MemberPods(name)[pod].Spec.NodeName
		onNode := mon.aimedAtNode(e, names, node)
		b.Logf("node %s down (members %s)", node, strings.Join(onNode, ", "))
		if err := k.NodeDown(node); err != nil {
			return err
		}
		// Every cluster whole without the node's members, then the node returns.
		var err error
		for _, n := range names {
			if err = waitHealthy(e, n, 3, chaosRecoveryBound, onNode...); err != nil {
				err = fmt.Errorf("%s with node %s down: %w", n, node, err)
				break
			}
		}
		if uerr := k.NodeUp(node); err == nil {
			err = uerr
		}
		return err
	case "node-partition":
		node := e.MemberPods(name)[pod].Spec.NodeName
		onNode := mon.aimedAtNode(e, names, node)
		b.Logf("node %s partitioned for 30s (members %s)", node, strings.Join(onNode, ", "))
		if err := k.PartitionNode(node); err != nil {
			return err
		}
		time.Sleep(30 * time.Second) // the fault's duration
		return k.HealNode(node)
	case "dns-delay":
		mon.aimedAt(name, pod)
		if err := k.DelayDNS("*."+name+".default.svc.cluster.local", 20*time.Second); err != nil {
			return err
		}
		p := e.MemberPods(name)[pod]
		return e.C.Delete(context.Background(), &p)
	case "operator-kill":
		mon.aimedAt(name, pod)
		before, err := e.Members(name)
		if err != nil {
			return err
		}
		p := e.MemberPods(name)[pod]
		if err := e.C.Delete(context.Background(), &p); err != nil {
			return err
		}
		// Mid-step: the operator dies as soon as it has started to change the
		// membership (the dead member removed or its successor added).
		err = poll.Until(2*time.Minute, 100*time.Millisecond, func() error {
			now, err := e.Members(name)
			if err != nil {
				return err
			}
			if sameIDs(before, now) {
				return fmt.Errorf("membership unchanged")
			}
			return nil
		})
		e.StopOperatorNow()
		e.StartOperator()
		if err != nil {
			return fmt.Errorf("the operator never started repairing %s: %w", name, err)
		}
		return nil
	case "apiserver-restart":
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return k.RestartAPIServer(ctx, 10*time.Second)
	}
	return fmt.Errorf("unknown fault %s", kind)
}

// liveMemberPods are the names, sorted, of cluster name's pods that are Ready, not being
// deleted, and named in etcd's member list: a fault aimed at a pod left over from an
// earlier one (evicted from a node that was down) would hit nothing.
func liveMemberPods(b *testing.B, e *framework.Env, name string) []string {
	ms, err := e.Members(name)
	if err != nil {
		b.Fatalf("%s: member list: %v", name, err)
	}
	member := map[string]bool{}
	for _, m := range ms {
		member[m.Name] = true
	}
	var out []string
	for n, p := range e.MemberPods(name) {
		if member[n] && p.DeletionTimestamp == nil && framework.PodReady(&p) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		b.Fatalf("cluster %s has no live member pod", name)
	}
	return out
}

func sameIDs(a, b []*framework.EtcdMember) bool {
	ids := func(ms []*framework.EtcdMember) []uint64 {
		var out []uint64
		for _, m := range ms {
			out = append(out, m.ID)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

// chaosMonitor samples every cluster's membership once a second and records what must
// never happen under chaos: a member removed while healthy and not aimed at by the
// current fault, two learners at once, or more than size+1 members (two replacements
// at once).
type chaosMonitor struct {
	e     *framework.Env
	names []string
	size  int

	mu     sync.Mutex
	aimed  map[string]bool // cluster/pod hit by the current fault
	viol   []string
	halt   chan struct{}
	done   chan struct{}
	sample map[string]map[uint64]memberSample
}

type memberSample struct {
	name    string
	healthy bool
}

func startChaosMonitor(e *framework.Env, names []string, size int) *chaosMonitor {
	m := &chaosMonitor{e: e, names: names, size: size, aimed: map[string]bool{},
		halt: make(chan struct{}), done: make(chan struct{}), sample: map[string]map[uint64]memberSample{}}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-m.halt:
				return
			case <-tick.C:
			}
			for _, name := range names {
				m.observe(name)
			}
		}
	}()
	return m
}

func (m *chaosMonitor) observe(name string) {
	ms, err := m.e.Members(name)
	if err != nil {
		return // no quorum or no endpoint right now: nothing to compare
	}
	// Never MemberPods here: its t.Fatal from this goroutine would end the monitor (and
	// fail the run without a word) the first time the API server restarts.
	pods, err := m.e.ListMemberPods(name)
	if err != nil {
		return
	}
	sts := framework.StatusesOf(pods)
	now := map[uint64]memberSample{}
	learners := 0
	for _, x := range ms {
		if x.IsLearner {
			learners++
		}
		p, hasPod := pods[x.Name]
		st, answered := sts[x.Name]
		now[x.ID] = memberSample{name: x.Name, healthy: hasPod && p.DeletionTimestamp == nil &&
			framework.PodReady(&p) && answered && st.ID == x.ID && st.Leader != 0}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if learners > 1 {
		m.viol = append(m.viol, fmt.Sprintf("%s: %d learners at once", name, learners))
	}
	if len(ms) > m.size+1 {
		m.viol = append(m.viol, fmt.Sprintf("%s: %d members, more than one replacement at a time", name, len(ms)))
	}
	for id, was := range m.sample[name] {
		if _, still := now[id]; !still && was.healthy && !m.aimed[name+"/"+was.name] {
			m.viol = append(m.viol, fmt.Sprintf("%s: member %s (%x) removed while healthy and not hit by a fault", name, was.name, id))
		}
	}
	m.sample[name] = now
}

// aimedAt marks pod of cluster name as hit by the current fault.
func (m *chaosMonitor) aimedAt(name, pod string) {
	m.mu.Lock()
	m.aimed[name+"/"+pod] = true
	m.mu.Unlock()
}

// aimedAtNode marks every member pod on node as hit and returns their names.
func (m *chaosMonitor) aimedAtNode(e *framework.Env, names []string, node string) []string {
	var out []string
	for _, n := range names {
		for p, pod := range e.MemberPods(n) {
			if pod.Spec.NodeName == node {
				m.aimedAt(n, p)
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// faultDone clears the marks once every cluster is whole again.
func (m *chaosMonitor) faultDone() {
	m.mu.Lock()
	m.aimed = map[string]bool{}
	m.mu.Unlock()
}

func (m *chaosMonitor) stop() {
	close(m.halt)
	<-m.done
}

func (m *chaosMonitor) violations() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.viol)
}
