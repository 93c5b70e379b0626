package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

func TestEtcdNotRunning(t *testing.T) {
	withState := func(name string, st corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: name, State: st}}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"no container status yet: unknown, dial it", &corev1.Pod{}, false},
		{"running", withState(render.ContainerName, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}), false},
		{"killed", withState(render.ContainerName, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}), true},
		{"waiting for a restart", withState(render.ContainerName, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}), true},
		{"another container terminated", withState("sidecar", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}), false},
	}
	for _, tc := range cases {
		if got := etcdNotRunning(tc.pod); got != tc.want {
			t.Errorf("%s: etcdNotRunning = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEtcdContainerFacts(t *testing.T) {
	pod := func(st corev1.ContainerState, last *corev1.ContainerStateTerminated, restarts int32) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerName, Image: "etcd:v3.6.99"}}}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName, State: st,
			LastTerminationState: corev1.ContainerState{Terminated: last}, RestartCount: restarts}}
		return p
	}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}
	cases := []struct {
		name              string
		pod               *corev1.Pod
		running, neverRan bool
	}{
		{"no status yet", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerName, Image: "etcd:v3.6.99"}}}}, false, true},
		{"image cannot be pulled", pod(waiting, nil, 0), false, true},
		{"crash loop after a run", pod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, &corev1.ContainerStateTerminated{ExitCode: 1}, 3), false, false},
		{"waiting after restarts", pod(waiting, nil, 2), false, false},
		{"running", pod(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, nil, 0), true, false},
		{"terminated", pod(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}, nil, 0), false, false},
	}
	for _, tc := range cases {
		image, running, neverRan := etcdContainerFacts(tc.pod)
		if image != "etcd:v3.6.99" || running != tc.running || neverRan != tc.neverRan {
			t.Errorf("%s: image %q running %v neverRan %v, want running %v neverRan %v", tc.name, image, running, neverRan, tc.running, tc.neverRan)
		}
	}
}
