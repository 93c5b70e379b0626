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
	for _, tc := range []struct {
		name      string
		pods      map[string]*corev1.Pod
		status    bool
		reason    string
		failing   bool
		recovered bool
	}{
		{"no pods", nil, false, etcdv1beta2.ReasonNoPods, false, false},
		{"crash loop", map[string]*corev1.Pod{"a": podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 1s"), crashed))}, false, "CrashLoopBackOff", true, false},
		{"creating again", map[string]*corev1.Pod{"a": podWith("a", etcdState(waiting("ContainerCreating", ""), crashed))}, false, etcdv1beta2.ReasonPodsStarting, false, false},
		{"ready", map[string]*corev1.Pod{"a": ready}, true, etcdv1beta2.ReasonPodsRunning, false, true},
	} {
		u := podsHealthyCondition(tc.pods, nil)
		if u.Type != etcdv1beta2.ClusterConditionPodsHealthy || u.Status != tc.status || u.Reason != tc.reason || (u.Fail != "") != tc.failing || u.Recovered != tc.recovered {
			t.Errorf("%s: %+v", tc.name, u)
		}
	}
}
