package etcdcluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
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

// TestQuorumLossGrace: the annotation is read overflow-safely, and a grace so short that
// a blip (an election, a restart, a node briefly unreachable) would count as a lasting
// quorum loss is raised to the floor, with a warning; what cannot be read falls back to
// the planner's default, with a warning.
func TestQuorumLossGrace(t *testing.T) {
	const floor = DefaultMinQuorumLossGrace
	for _, tc := range []struct {
		value    string // "-" for no annotation
		want     time.Duration
		warnings []string // substrings of the warning; none: no warning
	}{
		{"-", 0, nil},
		{"90s", 90 * time.Second, nil},
		{"1m", time.Minute, nil},
		{"2000000h", 2000000 * time.Hour, nil},
		{"15s", floor, []string{AnnotationQuorumLossGrace, `"15s"`, "below the minimum 1m0s", "using 1m0s"}},
		{"1ns", floor, []string{"below the minimum"}},
		{"100000000h", 0, []string{`"100000000h"`, "not a positive duration", "default 5m0s"}},
		{"9223372036854775808ns", 0, []string{"not a positive duration"}},
		{"abc", 0, []string{"not a positive duration"}},
		{"", 0, []string{"not a positive duration"}},
		{"-5s", 0, []string{"not a positive duration"}},
		{"0s", 0, []string{"not a positive duration"}},
	} {
		c := newTestCluster()
		if tc.value != "-" {
			c.Annotations = map[string]string{AnnotationQuorumLossGrace: tc.value}
		}
		got, warning := quorumLossGrace(c, floor)
		if got != tc.want {
			t.Errorf("%q: grace %v, want %v", tc.value, got, tc.want)
		}
		if len(tc.warnings) == 0 && warning != "" {
			t.Errorf("%q: warning %q, want none", tc.value, warning)
		}
		for _, w := range tc.warnings {
			if !strings.Contains(warning, w) {
				t.Errorf("%q: warning %q does not say %q", tc.value, warning, w)
			}
		}
		if d := desiredFromSpec(c, floor).QuorumLossGrace; d != tc.want {
			t.Errorf("%q: planner grace %v, want %v", tc.value, d, tc.want)
		}
	}
	// The operator's own floor (lower on the test bench) is what applies.
	c := newTestCluster()
	c.Annotations = map[string]string{AnnotationQuorumLossGrace: "15s"}
	if d := desiredFromSpec(c, 10*time.Second).QuorumLossGrace; d != 15*time.Second {
		t.Errorf("floor 10s: grace %v, want 15s", d)
	}
}

func newTestCluster() *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
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

// A member is dialled at its pod IP without TLS, in brackets when the IP is IPv6, and at
// its DNS name with TLS (the name its server certificate carries).
func TestMemberEndpoint(t *testing.T) {
	pod := func(ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "main-0001", Namespace: "team-a"}, Status: corev1.PodStatus{PodIP: ip}}
	}
	plain := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "team-a"}}
	withTLS := plain.DeepCopy()
	withTLS.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{ServerSecret: "s"}}}
	for _, tc := range []struct {
		c    *etcdv1beta2.EtcdCluster
		ip   string
		want string
	}{
		{plain, "10.0.0.1", "http://10.0.0.1:2379"},
		{plain, "fd00:10:244::5", "http://[fd00:10:244::5]:2379"},
		{withTLS, "fd00:10:244::5", "https://main-0001.main.team-a.svc.cluster.local:2379"},
	} {
		r := &Reconciler{ClusterDomain: "cluster.local"}
		if got := r.memberEndpoint(tc.c, pod(tc.ip)); got != tc.want {
			t.Errorf("memberEndpoint(TLS %v, %s) = %q, want %q", tc.c.Spec.TLS != nil, tc.ip, got, tc.want)
		}
	}
}
