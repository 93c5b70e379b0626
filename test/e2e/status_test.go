package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// clusterCondition returns the named condition of a cluster, or nil.
func clusterCondition(c *etcdv1beta2.EtcdCluster, t etcdv1beta2.ClusterConditionType) *etcdv1beta2.ClusterCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == t {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition polls until the cluster's condition has the status and reason and its
// message mentions every string given.
func waitCondition(e *framework.Env, name string, t etcdv1beta2.ClusterConditionType, status corev1.ConditionStatus, reason string, timeout time.Duration, mentions ...string) *etcdv1beta2.ClusterCondition {
	return waitConditionReasons(e, name, t, status, []string{reason}, timeout, mentions...)
}

// waitConditionReasons is waitCondition for a condition whose reason may be any of
// reasons (e.g. the kubelet's ErrImagePull and ImagePullBackOff take turns).
func waitConditionReasons(e *framework.Env, name string, t etcdv1beta2.ClusterConditionType, status corev1.ConditionStatus, reasons []string, timeout time.Duration, mentions ...string) *etcdv1beta2.ClusterCondition {
	var got *etcdv1beta2.ClusterCondition
	e.Eventually(timeout, fmt.Sprintf("%s: %s=%s reason %v", name, t, status, reasons), func() error {
		got = clusterCondition(e.Cluster(name), t)
		if got == nil {
			return fmt.Errorf("no %s condition", t)
		}
		if got.Status != status || !slices.Contains(reasons, got.Reason) {
			return fmt.Errorf("%s=%s reason %s: %s", t, got.Status, got.Reason, got.Message)
		}
		for _, m := range mentions {
			if !strings.Contains(got.Message, m) {
				return fmt.Errorf("message %q does not mention %q", got.Message, m)
			}
		}
		return nil
	})
	return got
}

// TestStatusExplainsMembersThatCannotStart creates clusters whose members cannot start,
// each for another reason, and expects the cluster's status to say why within seconds,
// with the scheduler's or kubelet's own words, and one event.
func TestStatusExplainsMembersThatCannotStart(t *testing.T) {
	e := framework.Setup(t)

	unsched := newCluster("nosched", 1)
	unsched.Spec.Pod = &etcdv1beta2.PodPolicy{NodeSelector: map[string]string{"example.com/no-such-node": "true"}}
	e.Create(unsched)

	// The bench resolves etcd images of cached versions only; any other is reported like
	// an image that cannot be pulled (a real kubelet says ErrImagePull/ImagePullBackOff).
	noImage := newCluster("noimage", 1)
	noImage.Spec.Version = "3.6.99"
	e.Create(noImage)

	noSecret := newCluster("nosecret", 1)
	noSecret.Spec.TLS = framework.StaticTLS("absent-peer", "absent-server", "absent-operator")
	e.Create(noSecret)

	crash := newCluster("crash", 1)
	crash.Spec.Pod = &etcdv1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "lots"}}}
	e.Create(crash)

	ancient := newCluster("ancient", 1)
	ancient.Spec.Version = "3.3.25"
	e.Create(ancient)

	const within = 30 * time.Second
	t.Run("unschedulable", func(t *testing.T) {
		waitCondition(e, "nosched", etcdv1beta2.ClusterConditionPodsHealthy, corev1.ConditionFalse, "Unschedulable", within,
			"nosched-", "didn't match Pod's node affinity/selector")
		e.Eventually(10*time.Second, "an Unschedulable event", func() error {
			if n := eventCount(t, e, "nosched", "Unschedulable"); n != 1 {
				return fmt.Errorf("%d Unschedulable events", n)
			}
			return nil
		})
	})
	t.Run("image not available", func(t *testing.T) {
		// containerd's pull through the bench registry fails: the kubelet's own reasons.
		waitConditionReasons(e, "noimage", etcdv1beta2.ClusterConditionPodsHealthy, corev1.ConditionFalse,
			[]string{"ErrImagePull", "ImagePullBackOff"}, within, "3.6.99")
	})
	t.Run("TLS secrets missing", func(t *testing.T) {
		// The kubelet says ContainerCreating and explains only in a FailedMount event.
		waitCondition(e, "nosecret", etcdv1beta2.ClusterConditionPodsHealthy, corev1.ConditionFalse, "FailedMount", within, "absent-peer")
	})
	t.Run("crash loop", func(t *testing.T) {
		waitCondition(e, "crash", etcdv1beta2.ClusterConditionPodsHealthy, corev1.ConditionFalse, "CrashLoopBackOff", within,
			"keeps exiting", "ETCD_QUOTA_BACKEND_BYTES")
		first := crashRestarts(e, "crash")
		// A few more restarts must not announce the same failure again. Events with the
		// same message are folded into one with a count, so counts are summed.
		e.Eventually(60*time.Second, "two more restarts", func() error {
			if n := crashRestarts(e, "crash"); n < first+2 {
				return fmt.Errorf("%d restarts, had %d", n, first)
			}
			return nil
		})
		if n := eventCount(t, e, "crash", "CrashLoopBackOff"); n != 1 {
			t.Errorf("%d CrashLoopBackOff events over %d restarts, want exactly one", n, crashRestarts(e, "crash")-first+1)
		}
	})
	t.Run("unsupported version", func(t *testing.T) {
		waitCondition(e, "ancient", etcdv1beta2.ClusterConditionAvailable, corev1.ConditionFalse, etcdv1beta2.ReasonUnsupportedVersion, within, "3.3.25", "3.5")
		if c := e.Cluster("ancient"); c.Status.Phase != etcdv1beta2.ClusterPhaseFailed {
			t.Errorf("phase %q, want Failed", c.Status.Phase)
		}
		if n := len(e.MemberPods("ancient")); n != 0 {
			t.Errorf("%d pods created for an unsupported version", n)
		}
		// Raising the version makes it a cluster.
		e.Update("ancient", func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = "3.6.16" })
		e.WaitAvailable("ancient", 1, 90*time.Second)
	})
}

// TestSpecChangeAppliesToNewMembersOnly changes a field of a running cluster that only new
// pods get (a claim spec: running members keep the data they have; rolling reconfiguration
// renews pods for every other pod field): the change is reported, naming the field, no
// member is restarted, and a new member gets the claim.
func TestSpecChangeAppliesToNewMembersOnly(t *testing.T) {
	e := framework.Setup(t)
	const name = "reconf"
	e.Create(newCluster(name, 3))
	c := e.WaitAvailable(name, 3, 90*time.Second)
	if cond := clusterCondition(c, etcdv1beta2.ClusterConditionSpecApplied); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Fatalf("SpecApplied of a new cluster: %+v", cond)
	}
	before := e.MemberPods(name)

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: claimSpec()}
	})
	waitCondition(e, name, etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionFalse, etcdv1beta2.ReasonAppliesToNewMembersOnly,
		30*time.Second, "pod.persistentVolumeClaimSpec")
	e.Eventually(10*time.Second, "an "+etcdv1beta2.ReasonAppliesToNewMembersOnly+" event", func() error {
		if !framework.HasAny(e.EventReasons(name), etcdv1beta2.ReasonAppliesToNewMembersOnly) {
			return fmt.Errorf("events %v", e.EventReasons(name))
		}
		return nil
	})
	after := e.MemberPods(name)
	for n, p := range before {
		q, ok := after[n]
		if !ok || q.UID != p.UID {
			t.Errorf("member pod %s was replaced", n)
			continue
		}
		if restarts(&q) != restarts(&p) {
			t.Errorf("member pod %s restarted: %d -> %d", n, restarts(&p), restarts(&q))
		}
	}

	// A new member gets the claim; the old ones are still listed.
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	e.WaitAvailable(name, 4, 120*time.Second)
	cond := clusterCondition(e.Cluster(name), etcdv1beta2.ClusterConditionSpecApplied)
	for n, p := range e.MemberPods(name) {
		if _, old := before[n]; old {
			continue
		}
		if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil }) {
			t.Errorf("new member %s has no claim: volumes %+v", n, p.Spec.Volumes)
		}
		if cond == nil || strings.Contains(cond.Message, n) {
			t.Errorf("SpecApplied names the new member %s: %+v", n, cond)
		}
	}
}

// crashRestarts is the restart count of a one-member cluster's pod.
func crashRestarts(e *framework.Env, cluster string) int32 {
	for _, p := range e.MemberPods(cluster) {
		return restarts(&p)
	}
	return 0
}

// eventCount sums the counts of a cluster's events with the reason.
func eventCount(t *testing.T, e *framework.Env, cluster, reason string) int32 {
	var evs corev1.EventList
	if err := e.C.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == cluster && ev.InvolvedObject.Kind == "EtcdCluster" && ev.Reason == reason {
			n += max(ev.Count, 1)
		}
	}
	return n
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
