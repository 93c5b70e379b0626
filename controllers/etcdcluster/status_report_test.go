package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestPodsHealthyCondition(t *testing.T) {
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "fatal"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	ready := podWith("a", func(p *corev1.Pod) {
		etcdState(running, crashed)(p)
		p.Status.ContainerStatuses[0].Ready = true
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	})
	const typ = etcdv1beta2.ClusterConditionPodsHealthy
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod // nil: none
		want conditionUpdate
	}{
		{"no pods", nil, conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonNoPods}},
		{"crash loop", podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 1s"), crashed)),
			conditionUpdate{Type: typ, Reason: "CrashLoopBackOff", Fail: "CrashLoopBackOff a=CrashLoopBackOff"}},
		{"creating again", podWith("a", etcdState(waiting("ContainerCreating", ""), crashed)), conditionUpdate{Type: typ, Reason: etcdv1beta2.ReasonPodsStarting}},
		{"ready", ready, conditionUpdate{Type: typ, Status: true, Reason: etcdv1beta2.ReasonPodsRunning, Recovered: true}},
	} {
		pods := map[string]*corev1.Pod{}
		if tc.pod != nil {
			pods["a"] = tc.pod
		}
		wantUpdate(t, tc.name, podsHealthyCondition(pods, nil), tc.want)
	}
}
