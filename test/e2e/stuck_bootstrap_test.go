package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
