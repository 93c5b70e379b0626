package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// imageFailures are the waiting reasons of a container whose image cannot be had
// (the bench's kubelet reports an unknown image as CreateContainerError).
var imageFailures = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerError"}

// TestStuckBootstrapFollowsCorrectedSpec: a cluster created with a version no image
// exists for never forms; correcting spec.version makes it form, on the same pods,
// without anyone deleting a pod.
func TestStuckBootstrapFollowsCorrectedSpec(t *testing.T) {
	e := framework.Setup(t)
	const name = "typo"
	c := newCluster(name, 3)
	c.Spec.Version = "3.6.99"
	e.Create(c)

	pods := map[string]types.UID{}
	e.Eventually(90*time.Second, "every member pod to report that its etcd image cannot be had", func() error {
		ps := e.MemberPods(name)
		if len(ps) != 3 {
			return fmt.Errorf("%d member pods", len(ps))
		}
		for n, p := range ps {
			if reason := etcdWaitingReason(&p); !slices.Contains(imageFailures, reason) {
				return fmt.Errorf("pod %s: etcd container waiting reason %q", n, reason)
			}
			pods[n] = p.UID
		}
		return nil
	})
	if got := e.Cluster(name); got.Status.Bootstrapped {
		t.Fatalf("a cluster on a missing image was recorded as bootstrapped: %+v", got.Status)
	}

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = "3.6.16" })
	got := e.WaitAvailable(name, 3, 120*time.Second)
	if got.Status.CurrentVersion != "3.6.16" {
		t.Errorf("current version %q", got.Status.CurrentVersion)
	}
	for n, p := range e.MemberPods(name) {
		if pods[n] != p.UID {
			t.Errorf("pod %s was replaced (uid %s, was %s); the pods should have been corrected in place", n, p.UID, pods[n])
		}
	}
	if !framework.HasAny(e.EventReasons(name), "BootstrapPodCorrected") {
		t.Errorf("no BootstrapPodCorrected event: %v", e.EventReasons(name))
	}
}

func etcdWaitingReason(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerName && cs.State.Waiting != nil {
			return cs.State.Waiting.Reason
		}
	}
	return ""
}

// waitStuckPods waits until the cluster has size member pods and each is stuck as
// stuck says (nil: it is), and returns their UIDs.
func waitStuckPods(e *framework.Env, name string, size int, what string, stuck func(p *corev1.Pod) error) map[string]types.UID {
	pods := map[string]types.UID{}
	e.Eventually(90*time.Second, what, func() error {
		ps := e.MemberPods(name)
		if len(ps) != size {
			return fmt.Errorf("%d member pods", len(ps))
		}
		for n, p := range ps {
			if err := stuck(&p); err != nil {
				return fmt.Errorf("pod %s: %v", n, err)
			}
			pods[n] = p.UID
		}
		return nil
	})
	return pods
}

// checkRecreatedFromSpec: every member pod was replaced by one of the same name
// (the same initial cluster), and an event said why.
func checkRecreatedFromSpec(t *testing.T, e *framework.Env, name string, old map[string]types.UID) {
	t.Helper()
	now := e.MemberPods(name)
	if len(now) != len(old) {
		t.Errorf("member pods %v, want the names %v", keys(now), keys(old))
	}
	for n, uid := range old {
		p, ok := now[n]
		if !ok {
			t.Errorf("pod %s is gone: the bootstrap's names must be kept", n)
		} else if p.UID == uid {
			t.Errorf("pod %s was not recreated", n)
		}
	}
	if !framework.HasAny(e.EventReasons(name), "BootstrapPodCorrected") {
		t.Errorf("no BootstrapPodCorrected event: %v", e.EventReasons(name))
	}
}

// TestNeverFormedFollowsNodeSelectorFix: a cluster on claims created with a nodeSelector
// no node matches never schedules; correcting spec.pod.nodeSelector makes it form on
// pods created from the corrected spec, without anyone deleting a pod.
func TestNeverFormedFollowsNodeSelectorFix(t *testing.T) {
	e := framework.Setup(t)
	const name = "nowhere"
	c := newCluster(name, 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{NodeSelector: map[string]string{"etcd-e2e/no-such-node": "true"}, PersistentVolumeClaimSpec: claimSpec()}
	e.Create(c)
	old := waitStuckPods(e, name, 3, "every member pod unschedulable", func(p *corev1.Pod) error {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return nil
			}
		}
		return fmt.Errorf("not reported unschedulable: phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
	if got := e.Cluster(name); got.Status.Bootstrapped {
		t.Fatalf("an unscheduled cluster was recorded as bootstrapped: %+v", got.Status)
	}

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod.NodeSelector = map[string]string{corev1.LabelOSStable: "linux"}
	})
	e.WaitAvailable(name, 3, 180*time.Second)
	checkRecreatedFromSpec(t, e, name, old)
	for n, p := range e.MemberPods(name) {
		if p.Spec.NodeSelector[corev1.LabelOSStable] != "linux" || p.Spec.NodeSelector["etcd-e2e/no-such-node"] != "" {
			t.Errorf("pod %s has node selector %v, want the corrected one", n, p.Spec.NodeSelector)
		}
	}
}

// TestNeverFormedFollowsSecretNameFix: a TLS cluster created naming a peer Secret that
// does not exist never starts (its pods cannot mount it); correcting the Secret's name
// makes it form, over TLS, on pods created from the corrected spec.
func TestNeverFormedFollowsSecretNameFix(t *testing.T) {
	e := framework.Setup(t)
	const name = "typosecret"
	pki := staticTLSSecrets(t, e, name)
	c := newCluster(name, 3)
	c.Spec.TLS = framework.StaticTLS("typosecret-peeer", "typosecret-server", "typosecret-operator")
	e.Create(c)
	old := waitStuckPods(e, name, 3, "every member pod unable to mount the Secret", func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		var evs corev1.EventList
		if err := e.C.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "Pod" && ev.InvolvedObject.UID == p.UID && ev.Reason == "FailedMount" {
				return nil
			}
		}
		return fmt.Errorf("no FailedMount event yet")
	})

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.TLS.Static.Member.PeerSecret = "typosecret-peer" })
	e.WaitAvailableTLS(name, 3, pki.ClientConfig(t), 180*time.Second)
	checkRecreatedFromSpec(t, e, name, old)
}
