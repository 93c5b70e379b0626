package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestRollingReconfigureWithClaims changes spec.pod.resources of a running 3-member
// cluster with claims under a write load: every member pod is recreated on its claim,
// one at a time, keeping its member ID, with the new resources; no acknowledged write
// fails or is lost, and SpecApplied is True again at the end. Then a change to
// spec.pod.labels reaches every pod in place: no pod is recreated.
func TestRollingReconfigureWithClaims(t *testing.T) {
	e := framework.Setup(t)
	const name = "reconf"
	before := startClaimedCluster(t, e, name)
	roll := watchRoll(e, name)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)

	want := resource.MustParse("64Mi")
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: want}
	})
	sawRolling := false
	e.Eventually(300*time.Second, "every member pod recreated with the new resources", func() error {
		if cl := e.Cluster(name); strings.HasPrefix(conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied), etcdv1beta2.ReasonRollingOut+":") {
			sawRolling = true
		}
		pods := e.MemberPods(name)
		if err := roll.sample(pods); err != nil {
			return err
		}
		for n := range roll.oldUID {
			if got := etcdRequest(pods[n], corev1.ResourceMemory); got.Cmp(want) != 0 {
				return fmt.Errorf("pod %s requests memory %s, want %s", n, got.String(), want.String())
			}
		}
		return nil
	})
	roll.doneOnSameMembers(t, e, name, before)
	if !sawRolling {
		t.Errorf("SpecApplied never said %s", etcdv1beta2.ReasonRollingOut)
	}
	if framework.HasAny(e.EventReasons(name), "MemberReplaced", "MemberRemoved") {
		t.Errorf("a member was replaced instead of recreated on its claim: %v", e.EventReasons(name))
	}
	flowing(t, load, 2*loadRate)
	res := verifyLoad(t, load)
	t.Logf("recreated in order %v, at most %d away at once, load %s", roll.order, roll.worst, res)

	// Labels reach the running pods in place.
	uids := map[string]types.UID{}
	for n, p := range e.MemberPods(name) {
		uids[n] = p.UID
	}
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Pod.Labels = map[string]string{"team": "storage"} })
	e.Eventually(90*time.Second, "every member pod labelled in place", func() error {
		pods := e.MemberPods(name)
		for n, uid := range uids {
			p, ok := pods[n]
			if !ok || p.UID != uid {
				return fmt.Errorf("pod %s was recreated for a label", n)
			}
			if p.Labels["team"] != "storage" {
				return fmt.Errorf("pod %s has no label team=storage yet", n)
			}
		}
		return nil
	})
	waitSpecApplied(e, name)
	// No PodReconfigured event is required here: client-go's event spam filter drops an
	// object's events past a burst of 25, which this cluster's rollout above may already
	// have used; act_reconfigure_test.go checks the event.
	for n, p := range e.MemberPods(name) {
		if p.UID != uids[n] {
			t.Errorf("pod %s recreated for a label change", n)
		}
	}
}

// waitSpecApplied waits for SpecApplied=True.
func waitSpecApplied(e *framework.Env, name string) {
	e.Eventually(60*time.Second, "SpecApplied=True", func() error {
		c := e.Cluster(name)
		if !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionSpecApplied) {
			return fmt.Errorf("SpecApplied: %s", conditionReason(c, etcdv1beta2.ClusterConditionSpecApplied))
		}
		return nil
	})
}

func conditionReason(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Reason + ": " + cond.Message
		}
	}
	return ""
}

func podIsReady(p corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// etcdRequest is the etcd container's request for r.
func etcdRequest(p corev1.Pod, r corev1.ResourceName) resource.Quantity {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == render.ContainerName {
			return ctr.Resources.Requests[r]
		}
	}
	return resource.Quantity{}
}

// TestRollingReconfigureWithoutClaims changes spec.pod.resources of a running 3-member
// cluster without claims under a write load: each member is replaced through a learner
// (added and promoted before the old member is removed), so the cluster never has fewer
// than 3 voters; the cluster ID stays, no acknowledged write fails or is lost.
func TestRollingReconfigureWithoutClaims(t *testing.T) {
	e := framework.Setup(t)
	const name = "reconf-nc"
	e.Create(newCluster(name, 3))
	c := e.WaitAvailable(name, 3, 120*time.Second)
	clusterID := c.Status.ClusterID
	oldPods := e.MemberPods(name)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)
	mon := monitorMembership(e, name)

	want := resource.MustParse("64Mi")
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod = &etcdv1beta2.PodPolicy{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: want}}}
	})
	e.Eventually(400*time.Second, "every member replaced by one with the new resources", func() error {
		pods := e.MemberPods(name)
		for n := range oldPods {
			if _, ok := pods[n]; ok {
				return fmt.Errorf("old member pod %s still there", n)
			}
		}
		if len(pods) != 3 {
			return fmt.Errorf("%d member pods", len(pods))
		}
		for n, p := range pods {
			if got := etcdRequest(p, corev1.ResourceMemory); got.Cmp(want) != 0 {
				return fmt.Errorf("pod %s requests memory %s", n, got.String())
			}
		}
		return nil
	})
	c = e.WaitAvailable(name, 3, 120*time.Second)
	mon.finish()
	waitSpecApplied(e, name)
	if c.Status.ClusterID != clusterID {
		t.Errorf("cluster ID %s -> %s", clusterID, c.Status.ClusterID)
	}
	mon.mu.Lock()
	t.Logf("membership samples=%d maxLearners=%d maxMembers=%d minVoters=%d", mon.samples, mon.maxLearners, mon.maxMembers, mon.minVoters)
	if mon.samples == 0 || mon.minVoters < 3 || mon.maxLearners > 1 || mon.maxMembers > 4 {
		t.Errorf("redundancy dropped or changes overlapped: minVoters=%d maxLearners=%d maxMembers=%d", mon.minVoters, mon.maxLearners, mon.maxMembers)
	}
	mon.mu.Unlock()
	flowing(t, load, 2*loadRate)
	res := verifyLoad(t, load)
	t.Logf("load %s", res)
}
