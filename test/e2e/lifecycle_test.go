package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
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
	e := setup(t)
	ctx := context.Background()
	const name = "life"
	e.create(newCluster(name, 3))

	c := e.waitAvailable(name, 3, 90*time.Second)
	if c.Status.Phase != etcdv1beta2.ClusterPhaseRunning || c.Status.ServiceName != name+"-client" ||
		c.Status.ClientPort != 2379 || c.Status.CurrentVersion != "3.6.16" || c.Status.Size != 3 {
		t.Errorf("status after create: %+v", c.Status)
	}
	// All initial members bootstrap together: one initial cluster, no learner step.
	if hasAny(e.eventReasons(name), "MemberAdded") {
		t.Errorf("initial members were added one by one: events %v", e.eventReasons(name))
	}

	cli := e.etcdClient(name)
	e.eventually(30*time.Second, "put/get through the client service", func() error {
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
	before, err := e.members(name)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("scale up to 5 through learners", func(t *testing.T) {
		e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 5 })
		e.waitAvailable(name, 5, 120*time.Second)
		after, err := e.members(name)
		if err != nil {
			t.Fatal(err)
		}
		for id, n := range memberIDs(before) {
			if memberIDs(after)[id] != n {
				t.Errorf("original member %s (%x) changed during scale up", n, id)
			}
		}
		if !hasAny(e.eventReasons(name), "MemberPromoted") {
			t.Errorf("no learner was promoted: events %v", e.eventReasons(name))
		}
	})

	t.Run("scale down to 3", func(t *testing.T) {
		e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
		e.waitAvailable(name, 3, 120*time.Second)
		e.eventually(30*time.Second, "removed members' pods gone", func() error {
			if n := len(e.memberPods(name)); n != 3 {
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
		e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = true })
		e.eventually(20*time.Second, "controlPaused", func() error {
			if !e.cluster(name).Status.ControlPaused {
				return fmt.Errorf("status.controlPaused still false")
			}
			return nil
		})
		// Scale while paused: nothing may change.
		e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
		pods := e.memberPods(name)
		ms, _ := e.members(name)
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			if n := len(e.memberPods(name)); n != len(pods) {
				t.Fatalf("paused cluster changed from %d to %d pods", len(pods), n)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if now, _ := e.members(name); len(now) != len(ms) {
			t.Fatalf("paused cluster's membership changed: %d → %d", len(ms), len(now))
		}
		e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = false; c.Spec.Size = 3 })
		e.waitAvailable(name, 3, 60*time.Second)
	})

	t.Run("delete removes pods and services", func(t *testing.T) {
		if err := e.c.Delete(ctx, e.cluster(name), client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		e.eventually(60*time.Second, "owned objects garbage-collected", func() error {
			if n := len(e.memberPods(name)); n != 0 {
				return fmt.Errorf("%d pods left", n)
			}
			var svcs corev1.ServiceList
			if err := e.c.List(ctx, &svcs, client.InNamespace("default")); err != nil {
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
	e := setup(t)
	nodes := e.bench.Nodes()

	anti := newCluster("spread", 3)
	anti.Spec.Pod = &etcdv1beta2.PodPolicy{AntiAffinity: true}
	e.create(anti)
	pinned := newCluster("pinned", 1)
	pinned.Spec.Pod = &etcdv1beta2.PodPolicy{NodeSelector: map[string]string{"kubernetes.io/hostname": nodes[1]}}
	e.create(pinned)

	e.waitAvailable("spread", 3, 90*time.Second)
	e.waitAvailable("pinned", 1, 90*time.Second)

	used := map[string]string{}
	for n, p := range e.memberPods("spread") {
		if other, dup := used[p.Spec.NodeName]; dup {
			t.Errorf("antiAffinity: %s and %s share node %s", n, other, p.Spec.NodeName)
		}
		used[p.Spec.NodeName] = n
	}
	for n, p := range e.memberPods("pinned") {
		if p.Spec.NodeName != nodes[1] {
			t.Errorf("nodeSelector: %s on %s, want %s", n, p.Spec.NodeName, nodes[1])
		}
	}

	// A fourth member cannot be placed on three nodes with required anti-affinity: it
	// must stay pending without the operator breaking the running three.
	e.update("spread", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	e.eventually(60*time.Second, "the fourth member unschedulable", func() error {
		for _, p := range e.memberPods("spread") {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					return nil
				}
			}
		}
		return fmt.Errorf("no pod reported unschedulable")
	})
	c := e.cluster("spread")
	if !conditionTrue(c, etcdv1beta2.ClusterConditionAvailable) {
		t.Errorf("cluster lost availability while a learner could not be scheduled: %+v", c.Status.Conditions)
	}
}

// TestLateDNSNeverReplaces delays the DNS record of the member a scale-up adds. The
// member must join once its record appears; the operator must not remove or replace it.
func TestLateDNSNeverReplaces(t *testing.T) {
	e := setup(t)
	const name = "latedns"
	e.create(newCluster(name, 1))
	e.waitAvailable(name, 1, 60*time.Second)

	// The next member's name is not known in advance: delay every new record by watching
	// for the learner's pod and delaying its FQDNs as soon as it appears.
	known := e.memberPods(name)
	e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 })
	var added string
	e.eventually(30*time.Second, "the new member's pod", func() error {
		for n := range e.memberPods(name) {
			if _, ok := known[n]; !ok {
				added = n
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	const delay = 25 * time.Second
	c := e.cluster(name)
	for _, host := range []string{
		render.MemberHost(c, added, ""),
		render.MemberHost(c, added, "cluster.local"),
	} {
		e.bench.Kubelet().DelayDNS(host, delay)
	}
	first, _ := e.members(name)
	e.waitAvailable(name, 2, delay+90*time.Second)
	after, err := e.members(name)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range after {
		names = append(names, m.Name)
	}
	if !slices.Contains(names, added) {
		t.Errorf("member %s replaced while its DNS record was late: members now %v (were %d)", added, names, len(first))
	}
	if hasAny(e.eventReasons(name), "MemberReplaced", "MemberRemoved") {
		t.Errorf("a member was removed or replaced: events %v", e.eventReasons(name))
	}
}

// TestOperatorRestartMidScale stops the operator right after it adds a learner and starts
// a new one: the new operator must finish that learner, not add a second one.
func TestOperatorRestartMidScale(t *testing.T) {
	e := setup(t)
	const name = "restart"
	e.create(newCluster(name, 3))
	e.waitAvailable(name, 3, 90*time.Second)

	e.update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	e.eventually(30*time.Second, "a learner in flight", func() error {
		if e.cluster(name).Status.PendingMember == nil {
			return fmt.Errorf("no pending member yet")
		}
		return nil
	})
	pending := e.cluster(name).Status.PendingMember.Name
	e.stopOperatorNow()
	e.startOperator()

	e.waitAvailable(name, 4, 120*time.Second)
	ms, err := e.members(name)
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
