package etcdcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// A member gets the short status probe only while it cannot be serving yet: its pod not
// Ready, its etcd process never Ready, and no answer from it yet. Every other member,
// however slow, keeps the client's full ProbeTimeout (0 here).
func TestProbeTimeout(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	pod := func(ready *corev1.ConditionStatus, readyChanged metav1.Time, started *metav1.Time) *corev1.Pod {
		p := &corev1.Pod{}
		if ready != nil {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: *ready, LastTransitionTime: readyChanged}}
		}
		if started != nil {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *started}}}}
		}
		return p
	}
	isTrue, isFalse := corev1.ConditionTrue, corev1.ConditionFalse
	started := at(10)
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		answered bool
		want     time.Duration
	}{
		{"no Ready condition yet, no container status", pod(nil, metav1.Time{}, nil), false, startingProbeTimeout},
		{"not Ready since before its process started (starting, a learner)", pod(&isFalse, at(2), &started), false, startingProbeTimeout},
		{"not Ready since the second its process started", pod(&isFalse, at(10), &started), false, startingProbeTimeout},
		{"not Ready, container not reported yet", pod(&isFalse, at(2), nil), false, startingProbeTimeout},
		{"Ready", pod(&isTrue, at(20), &started), false, 0},
		{"was Ready, unready since after its process started (slow, or quorum lost)", pod(&isFalse, at(30), &started), false, 0},
		{"starting but it has answered this client (a serving learner)", pod(&isFalse, at(2), &started), true, 0},
		{"Ready and answered", pod(&isTrue, at(20), &started), true, 0},
	} {
		if got := probeTimeout(tc.pod, tc.answered); got != tc.want {
			t.Errorf("%s: probe bound %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The bound of each dialled endpoint is its own pod's; an endpoint of no known pod, and
// every member of a cluster that has not formed yet, keeps the full ProbeTimeout.
func TestProbeBounds(t *testing.T) {
	starting := &corev1.Pod{}
	ready := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	pods := map[string]*corev1.Pod{"a": starting, "b": ready}
	epOfPod := map[string]string{"a": "http://10.0.0.1:2379", "b": "http://10.0.0.2:2379"}
	admin, err := etcdadmin.New(etcdadmin.Config{Endpoints: []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}}) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if probeBounds(admin, false, pods, epOfPod) != nil {
		t.Error("a cluster that has not formed got probe bounds; want every probe the full ProbeTimeout")
	}
	within := probeBounds(admin, true, pods, epOfPod)
	if got := within("http://10.0.0.1:2379"); got != startingProbeTimeout {
		t.Errorf("starting member's endpoint: %v, want %v", got, startingProbeTimeout)
	}
	if got := within("http://10.0.0.2:2379"); got != 0 {
		t.Errorf("Ready member's endpoint: %v, want 0 (ProbeTimeout)", got)
	}
	if got := within("http://10.0.0.3:2379"); got != 0 {
		t.Errorf("unknown endpoint: %v, want 0 (ProbeTimeout)", got)
	}
}
