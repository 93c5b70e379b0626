package benchmark

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// killRounds is the number of kill -9 rounds (and of baseline restarts) per iteration.
const killRounds = 5

// BenchmarkKillMember SIGKILLs one member's etcd process per round (followers and the
// leader in turn) and measures kill → the operator's status shows the member unready
// (detect) and kill → the member serves again and the status is back at full size and
// healthy. The baseline, measured in the same run on the same cluster, is a plain
// container restart (SIGTERM, the kubelet restarts it) → the member serves again.
// Reported: medians in seconds, healthy/baseline ratio, healthy/10 s target ratio.
func BenchmarkKillMember(b *testing.B) {
	e := framework.Setup(b)
	const name = "killmember"
	createCluster(b, e, name, 3, "3.6.16")
	var detect, healthy, baseline []time.Duration
	missed := 0
	for i := 0; i < b.N*killRounds; i++ {
		pods := sortedPods(b, e, name)
		pod := pods[i%len(pods)]
		baseline = append(baseline, restartMember(b, e, name, pod, syscall.SIGTERM, nil))
		d := time.Duration(-1)
		h := restartMember(b, e, name, pod, syscall.SIGKILL, func(c *etcdv1beta2.EtcdCluster, since time.Duration) {
			if d < 0 && (slices.Contains(c.Status.Members.Unready, pod) || !slices.Contains(c.Status.Members.Ready, pod)) {
				d = since
			}
		})
		if d < 0 {
			// The member came back before the operator's status showed it gone.
			missed++
		} else {
			detect = append(detect, d)
		}
		healthy = append(healthy, h)
	}
	hm, bm := median(healthy), median(baseline)
	b.ReportMetric(hm.Seconds(), "kill-to-healthy-s")
	b.ReportMetric(bm.Seconds(), "restart-baseline-s")
	b.ReportMetric(hm.Seconds()/bm.Seconds(), "healthy/baseline")
	b.ReportMetric(hm.Seconds()/10, "healthy/target10s")
	if len(detect) > 0 {
		b.ReportMetric(median(detect).Seconds(), "kill-to-detect-s")
	}
	b.ReportMetric(float64(missed), "undetected-rounds")
	b.Logf("kill→detect %v (missed %d), kill→healthy %v, plain restart %v", detect, missed, healthy, baseline)
}

// replaceRounds is the number of deleted-pod replacements per iteration.
const replaceRounds = 3

// BenchmarkReplaceMember deletes one member pod per round (its emptyDir data goes with
// it, so the member cannot come back) and measures delete → the operator's status shows
// the member unready (detect) and delete → a new member replaced it and the cluster is
// back at full size and healthy. The baseline, measured in the same run, is a plain
// container restart (SIGTERM) → the member serves again. Reported: medians in seconds
// and replaced/baseline.
func BenchmarkReplaceMember(b *testing.B) {
	e := framework.Setup(b)
	const name = "replacemember"
	createCluster(b, e, name, 3, "3.6.16")
	var detect, healthy, baseline []time.Duration
	for i := 0; i < b.N*replaceRounds; i++ {
		pods := sortedPods(b, e, name)
		baseline = append(baseline, restartMember(b, e, name, pods[0], syscall.SIGTERM, nil))
		victim := pods[i%len(pods)]
		p := e.MemberPods(name)[victim]
		start := time.Now()
		if err := e.C.Delete(context.Background(), &p); err != nil {
			b.Fatal(err)
		}
		d := time.Duration(-1)
		until(b, 3*time.Minute, func() bool {
			c := e.Cluster(name)
			if d < 0 && !slices.Contains(c.Status.Members.Ready, victim) {
				d = time.Since(start)
			}
			if slices.Contains(c.Status.Members.Ready, victim) || slices.Contains(c.Status.Members.Unready, victim) ||
				!framework.AvailableWith(c, 3) {
				return false
			}
			sts := e.MemberStatuses(name)
			if _, ok := sts[victim]; ok || len(sts) != 3 {
				return false
			}
			ready := 0
			for _, p := range e.MemberPods(name) {
				if framework.PodReady(&p) && p.DeletionTimestamp == nil {
					ready++
				}
			}
			return ready == 3
		})
		healthy = append(healthy, time.Since(start))
		detect = append(detect, d)
	}
	hm, bm := median(healthy), median(baseline)
	b.ReportMetric(median(detect).Seconds(), "delete-to-detect-s")
	b.ReportMetric(hm.Seconds(), "delete-to-healthy-s")
	b.ReportMetric(bm.Seconds(), "restart-baseline-s")
	b.ReportMetric(hm.Seconds()/bm.Seconds(), "replaced/baseline")
	b.Logf("delete→detect %v, delete→replaced and healthy %v, plain restart %v", detect, healthy, baseline)
}

// BenchmarkRollingUpgrade upgrades a 3-member cluster 3.6.16 → 3.7.3 under ~200 writes/s
// and compares the total duration with the sum of plain restarts of each member's
// container measured on the same cluster just before. Reported: failed writes,
// elections the operator did not ask for, durations and their ratio.
func BenchmarkRollingUpgrade(b *testing.B) {
	e := framework.Setup(b)
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("upgrade-%d", i)
		createCluster(b, e, name, 3, "3.6.16")
		load := e.StartLoad(name, 200)
		if err := load.WaitAcked(400, time.Minute); err != nil {
			b.Fatal(err)
		}

		var restarts time.Duration
		for _, pod := range sortedPods(b, e, name) {
			restarts += restartMember(b, e, name, pod, syscall.SIGTERM, nil)
		}
		term0 := maxTerm(e.MemberStatuses(name))
		moves0 := countEvents(b, e, name, "LeaderMoved")

		start := time.Now()
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = "3.7.3" })
		until(b, 5*time.Minute, func() bool {
			sts := e.MemberStatuses(name)
			if len(sts) != 3 {
				return false
			}
			for _, st := range sts {
				if st.Version != "3.7.3" {
					return false
				}
			}
			c := e.Cluster(name)
			return c.Status.CurrentVersion == "3.7.3" && len(c.Status.Members.Ready) == 3 &&
				framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable)
		})
		took := time.Since(start)
		if err := load.WaitAcked(400, time.Minute); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := load.Verify(ctx)
		cancel()
		if err != nil {
			b.Error(err)
		}
		elections := int(maxTerm(e.MemberStatuses(name)) - term0)
		planned := countEvents(b, e, name, "LeaderMoved") - moves0
		b.ReportMetric(float64(res.Failed), "failed-writes")
		b.ReportMetric(float64(elections-planned), "unplanned-elections")
		b.ReportMetric(took.Seconds(), "upgrade-s")
		b.ReportMetric(restarts.Seconds(), "sum-restarts-s")
		b.ReportMetric(took.Seconds()/restarts.Seconds(), "upgrade/restarts")
		b.Logf("upgrade %v vs sum of plain restarts %v; elections %d (planned %d); load %s", took, restarts, elections, planned, res)
		if err := e.C.Delete(context.Background(), e.Cluster(name)); err != nil {
			b.Fatal(err)
		}
	}
}

func createCluster(b *testing.B, e *framework.Env, name string, size int, version string) {
	e.Create(&etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: size, Version: version},
	})
	e.WaitAvailable(name, size, 2*time.Minute)
	until(b, time.Minute, func() bool { return len(e.MemberStatuses(name)) == size })
}

func sortedPods(b *testing.B, e *framework.Env, name string) []string {
	var out []string
	for p := range e.MemberPods(name) {
		out = append(out, p)
	}
	slices.Sort(out)
	if len(out) == 0 {
		b.Fatalf("cluster %s has no pods", name)
	}
	return out
}

// restartMember signals pod's etcd process and returns the time until the kubelet has
// restarted it, the member answers again, every member agrees on a leader and the
// operator's status shows the full cluster healthy. watch (optional) sees every status
// polled meanwhile with the time since the signal.
func restartMember(b *testing.B, e *framework.Env, name, pod string, sig syscall.Signal, watch func(*etcdv1beta2.EtcdCluster, time.Duration)) time.Duration {
	restarts := etcdRestarts(e.MemberPods(name)[pod])
	size := len(e.MemberPods(name))
	start := time.Now()
	if err := e.Bench.Faults().KillPod("default", pod, sig); err != nil {
		b.Fatal(err)
	}
	until(b, 2*time.Minute, func() bool {
		var c etcdv1beta2.EtcdCluster
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
			return false
		}
		if watch != nil {
			watch(&c, time.Since(start))
		}
		p, ok := e.MemberPods(name)[pod]
		if !ok || etcdRestarts(p) <= restarts || !framework.PodReady(&p) {
			return false
		}
		sts := e.MemberStatuses(name)
		if _, ok := sts[pod]; !ok || len(sts) != size {
			return false
		}
		var leader uint64
		for _, st := range sts {
			if st.Leader == 0 || leader != 0 && st.Leader != leader {
				return false
			}
			leader = st.Leader
		}
		return framework.AvailableWith(&c, size)
	})
	return time.Since(start)
}

func etcdRestarts(p corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerName {
			return cs.RestartCount
		}
	}
	return 0
}

func maxTerm(sts map[string]framework.MemberStatus) uint64 {
	var t uint64
	for _, st := range sts {
		t = max(t, st.RaftTerm)
	}
	return t
}

func countEvents(b *testing.B, e *framework.Env, name, reason string) int {
	var evs corev1.EventList
	if err := e.C.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == name && ev.InvolvedObject.Kind == "EtcdCluster" && ev.Reason == reason {
			n += int(max(ev.Count, 1))
		}
	}
	return n
}
