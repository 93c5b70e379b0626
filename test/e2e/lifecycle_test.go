package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

func newCluster(name string, size int) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: size, Version: "3.6.16"},
	}
}

// TestLifecycle walks one cluster through create → put/get → scale up → scale down →
// pause → resume → delete, checking etcd's own member list at each step.
func TestLifecycle(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()
	const name = "life"
	e.Create(newCluster(name, 3))

	c := e.WaitAvailable(name, 3, 90*time.Second)
	if c.Status.Phase != etcdv1beta2.ClusterPhaseRunning || c.Status.ServiceName != name+"-client" ||
		c.Status.ClientPort != 2379 || c.Status.CurrentVersion != "3.6.16" || c.Status.Size != 3 {
		t.Errorf("status after create: %+v", c.Status)
	}
	requireMemberDetails(t, e, name, 3, "3.6.16") // members_status_test.go
	// All initial members bootstrap together: one initial cluster, no learner step.
	if framework.HasAny(e.EventReasons(name), "MemberAdded") {
		t.Errorf("initial members were added one by one: events %v", e.EventReasons(name))
	}

	cli := e.EtcdClient(name)
	e.Eventually(30*time.Second, "put/get through the client service", func() error {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := cli.Put(cctx, "greeting", "hello"); err != nil {
			return err
		}
		r, err := cli.Get(cctx, "greeting")
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "hello" {
			return fmt.Errorf("got %v", r.Kvs)
		}
		return nil
	})
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("scale up to 5 through learners", func(t *testing.T) {
		// As a user would: kubectl scale, through the scale subresource.
		kubectl := filepath.Join(testenv.CacheDir(), "envtest-"+testenv.K8sVersion, "kubectl")
		out, err := exec.Command(kubectl, "--kubeconfig", e.Bench.Kubeconfig(), "-n", "default",
			"get", "etcd", name, "--subresource=scale", "-o", "jsonpath={.status.replicas} {.status.selector}").CombinedOutput()
		if err != nil || string(out) != "3 app=etcd,etcd_cluster="+name {
			t.Fatalf("kubectl get --subresource=scale: %q, %v; want replicas 3 and the member pods' selector", out, err)
		}
		if out, err := exec.Command(kubectl, "--kubeconfig", e.Bench.Kubeconfig(), "-n", "default",
			"scale", "etcd", name, "--replicas=5").CombinedOutput(); err != nil {
			t.Fatalf("kubectl scale: %v\n%s", err, out)
		}
		e.WaitAvailable(name, 5, 120*time.Second)
		after, err := e.Members(name)
		if err != nil {
			t.Fatal(err)
		}
		for id, n := range framework.MemberIDs(before) {
			if framework.MemberIDs(after)[id] != n {
				t.Errorf("original member %s (%x) changed during scale up", n, id)
			}
		}
		if !framework.HasAny(e.EventReasons(name), "MemberPromoted") {
			t.Errorf("no learner was promoted: events %v", e.EventReasons(name))
		}
	})

	t.Run("scale down to 3", func(t *testing.T) {
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
		e.WaitAvailable(name, 3, 120*time.Second)
		e.Eventually(30*time.Second, "removed members' pods gone", func() error {
			if n := len(e.MemberPods(name)); n != 3 {
				return fmt.Errorf("%d member pods", n)
			}
			return nil
		})
		r, err := cli.Get(ctx, "greeting")
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("data after scale down: %v %v", r, err)
		}
	})

	t.Run("pause leaves everything alone", func(t *testing.T) {
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = true })
		e.Eventually(20*time.Second, "controlPaused", func() error {
			if !e.Cluster(name).Status.ControlPaused {
				return fmt.Errorf("status.controlPaused still false")
			}
			return nil
		})
		// Scale while paused: nothing may change.
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
		pods := e.MemberPods(name)
		ms, err := e.Members(name)
		if err != nil || len(ms) == 0 {
			t.Fatalf("members of the paused cluster: %v (%v)", ms, err)
		}
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			if n := len(e.MemberPods(name)); n != len(pods) {
				t.Fatalf("paused cluster changed from %d to %d pods", len(pods), n)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if now, err := e.Members(name); err != nil || len(now) != len(ms) {
			t.Fatalf("paused cluster's membership changed: %d → %d (%v)", len(ms), len(now), err)
		}
		// Observing goes on while paused: a leader moved past the operator shows in
		// status.members (a paused cluster is observed every 30 s).
		to := moveLeader(t, e, name)
		e.Eventually(60*time.Second, "status.members.leader "+to+" while paused", func() error {
			if got := e.Cluster(name).Status.Members.Leader; got != to {
				return fmt.Errorf("status.members.leader %q", got)
			}
			return nil
		})
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = false; c.Spec.Size = 3 })
		e.WaitAvailable(name, 3, 60*time.Second)
	})

	t.Run("delete removes pods and services", func(t *testing.T) {
		if err := e.C.Delete(ctx, e.Cluster(name), client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		e.Eventually(60*time.Second, "owned objects garbage-collected", func() error {
			if n := len(e.MemberPods(name)); n != 0 {
				return fmt.Errorf("%d pods left", n)
			}
			var svcs corev1.ServiceList
			if err := e.C.List(ctx, &svcs, client.InNamespace("default")); err != nil {
				return err
			}
			for _, s := range svcs.Items {
				if s.Name == name || s.Name == name+"-client" {
					return fmt.Errorf("service %s left", s.Name)
				}
			}
			return nil
		})
	})
}

// TestScheduling proves the chart's scheduling values reach the real scheduler.
func TestScheduling(t *testing.T) {
	e := framework.Setup(t)
	nodes := e.Bench.Nodes()

	anti := newCluster("spread", 3)
	anti.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true}
	e.Create(anti)
	pinned := newCluster("pinned", 1)
	pinned.Spec.Pod = &etcdv1beta2.PodPolicy{NodeSelector: map[string]string{"kubernetes.io/hostname": nodes[1]}}
	e.Create(pinned)

	e.WaitAvailable("spread", 3, 90*time.Second)
	e.WaitAvailable("pinned", 1, 90*time.Second)

	used := map[string]string{}
	for n, p := range e.MemberPods("spread") {
		if other, dup := used[p.Spec.NodeName]; dup {
			t.Errorf("antiAffinity: %s and %s share node %s", n, other, p.Spec.NodeName)
		}
		used[p.Spec.NodeName] = n
	}
	for n, p := range e.MemberPods("pinned") {
		if p.Spec.NodeName != nodes[1] {
			t.Errorf("nodeSelector: %s on %s, want %s", n, p.Spec.NodeName, nodes[1])
		}
	}

	// A fourth member cannot be placed on three nodes with required anti-affinity: it
	// must stay pending without the operator breaking the running three.
	e.Update("spread", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	e.Eventually(60*time.Second, "the fourth member unschedulable", func() error {
		for _, p := range e.MemberPods("spread") {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					return nil
				}
			}
		}
		return fmt.Errorf("no pod reported unschedulable")
	})
	c := e.Cluster("spread")
	if !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAvailable) {
		t.Errorf("cluster lost availability while a learner could not be scheduled: %+v", c.Status.Conditions)
	}
}

// TestLateDNSNeverReplaces withholds the DNS records of the member a scale-up adds. The
// member must join (etcd lets a learner catch up over the stream it dials to the leader,
// whose record exists) or wait for its records; either way the operator must not remove
// or replace it, nor the member that was there.
func TestLateDNSNeverReplaces(t *testing.T) {
	e := framework.Setup(t)
	const name = "latedns"
	e.Create(newCluster(name, 1))
	e.WaitAvailable(name, 1, 60*time.Second)
	first, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	firstPods := e.MemberPods(name)

	// The new member's name is chosen by the operator, so delay every record of this
	// cluster that is not published yet (cluster DNS keeps the existing member's).
	const delay = 25 * time.Second
	if err := e.Bench.Faults().DelayDNS("*.latedns.default.svc.cluster.local", delay); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 })
	// The fault applies: the new member's pod exists, and its name does not resolve.
	var late string
	e.Eventually(delay/2, "the new member's pod", func() error {
		for p := range e.MemberPods(name) {
			if _, ok := firstPods[p]; !ok {
				late = p
				return nil
			}
		}
		return fmt.Errorf("no new member pod yet")
	})
	fqdn := late + "." + name + ".default.svc.cluster.local"
	if addrs, err := net.LookupHost(fqdn); err == nil && time.Since(scaled) < delay {
		t.Fatalf("%s resolves to %v during the DNS fault", fqdn, addrs)
	}
	e.WaitAvailable(name, 2, delay+90*time.Second)
	t.Logf("the late member %s joined %v after the scale-up (its records were withheld for %v)", late, time.Since(scaled).Round(time.Millisecond), delay)
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range framework.MemberIDs(first) {
		if framework.MemberIDs(after)[id] != n {
			t.Errorf("original member %s (%x) was replaced", n, id)
		}
	}
	if framework.HasAny(e.EventReasons(name), "MemberReplaced", "MemberRemoved") {
		t.Errorf("a member was removed or replaced: events %v", e.EventReasons(name))
	}
	if n := len(e.MemberPods(name)); n != 2 {
		t.Errorf("%d member pods, want 2 (the late member was not re-created)", n)
	}
}

// TestOperatorRestartMidScale stops the operator right after it adds a learner and starts
// a new one: the new operator must finish that learner, not add a second one.
func TestOperatorRestartMidScale(t *testing.T) {
	e := framework.Setup(t)
	const name = "restart"
	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 90*time.Second)

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	e.Eventually(30*time.Second, "a learner in flight", func() error {
		if e.Cluster(name).Status.PendingMember == nil {
			return fmt.Errorf("no pending member yet")
		}
		return nil
	})
	pending := e.Cluster(name).Status.PendingMember.Name
	e.StopOperatorNow()
	e.StartOperator()

	e.WaitAvailable(name, 4, 120*time.Second)
	ms, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if !slices.Contains(names, pending) {
		t.Errorf("the learner in flight (%s) was not the one that joined: %v", pending, names)
	}
}
