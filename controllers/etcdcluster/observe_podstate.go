package etcdcluster

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// What a member pod's status says about its etcd container, as the kubelet reports it.

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// etcdContainerState reports whether the etcd container is terminated (not running) and
// whether it is crash-looping.
func etcdContainerState(p *corev1.Pod) (terminated, crashLooping bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != render.ContainerName {
			continue
		}
		if cs.State.Terminated != nil {
			terminated = true
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			crashLooping = true
		}
	}
	return terminated, crashLooping
}

// etcdContainerFacts returns the etcd container's image (from the spec), whether the
// kubelet reports it running, and whether it has never run in this pod (no status
// yet, or waiting with no earlier termination and no restart): then it wrote no data.
func etcdContainerFacts(p *corev1.Pod) (image string, running, neverRan bool) {
	for _, ct := range p.Spec.Containers {
		if ct.Name == render.ContainerName {
			image = ct.Image
		}
	}
	neverRan = true
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != render.ContainerName {
			continue
		}
		running = cs.State.Running != nil
		neverRan = cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil && cs.RestartCount == 0
	}
	return image, running, neverRan
}

// etcdNotRunning reports that the kubelet says the etcd container is not running (a
// terminated or waiting state). Without a container status the answer is "unknown", not
// "not running".
func etcdNotRunning(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerName {
			return cs.State.Running == nil && (cs.State.Terminated != nil || cs.State.Waiting != nil)
		}
	}
	return false
}
