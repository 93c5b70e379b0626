package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func podWith(name string, mutate func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	mutate(p)
	return p
}

func scheduled(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
}

func etcdState(st corev1.ContainerState, last corev1.ContainerState) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		scheduled(p)
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: render.ContainerName, State: st, LastTerminationState: last})
	}
}

func waiting(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

func TestMemberPodIssue(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	none := corev1.ContainerState{}
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		Message: "starting\n{\"level\":\"fatal\",\"msg\":\"failed to start etcd\",\"error\":\"bad flag\"}\n"}}
	for _, c := range []struct {
		name        string
		pod         *corev1.Pod
		wantIssue   bool
		failing     bool
		reason      string
		msgContains []string
	}{
		{"running etcd", podWith("a", func(p *corev1.Pod) { etcdState(running, none)(p); p.Status.Phase = corev1.PodRunning }), false, false, "", nil},
		{"being deleted", podWith("a", func(p *corev1.Pod) {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			etcdState(waiting("CrashLoopBackOff", "back-off"), crashed)(p)
		}), false, false, "", nil},
		{"not yet scheduled", podWith("a", func(*corev1.Pod) {}), true, false, "Pending", nil},
		{"bound to a node without a PodScheduled condition", podWith("a", func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName, State: waiting("ErrImagePull", "not found")}}
		}), true, true, "ErrImagePull", nil},
		{"unschedulable", podWith("a", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
		}), true, true, "Unschedulable", []string{"didn't match Pod's node affinity/selector"}},
		{"creating", podWith("a", etcdState(waiting("ContainerCreating", ""), none)), true, false, "ContainerCreating", nil},
		{"volume cannot be set up (the bench says why)", podWith("a", etcdState(waiting("ContainerCreating", `secret "peer-tls" not found`), none)),
			true, true, "ContainerCreating", []string{`secret "peer-tls" not found`}},
		{"image pull failed", podWith("a", etcdState(waiting("ErrImagePull", "rpc error: manifest for example/etcd:v3.6.99 not found"), none)),
			true, true, "ErrImagePull", []string{"example/etcd:v3.6.99 not found"}},
		{"image pull back-off", podWith("a", etcdState(waiting("ImagePullBackOff", `Back-off pulling image "example/etcd:v3.6.99"`), none)),
			true, true, "ImagePullBackOff", []string{"example/etcd:v3.6.99"}},
		{"invalid image name", podWith("a", etcdState(waiting("InvalidImageName", `couldn't parse image name "Bad:Image"`), none)),
			true, true, "InvalidImageName", []string{"Bad:Image"}},
		{"env references a missing secret", podWith("a", etcdState(waiting("CreateContainerConfigError", `secret "creds" not found`), none)),
			true, true, "CreateContainerConfigError", []string{`secret "creds" not found`}},
		{"container cannot be created", podWith("a", etcdState(waiting("CreateContainerError", "image etcd:v9.9.9 is not available"), none)),
			true, true, "CreateContainerError", []string{"not available"}},
		{"crash loop with the last termination", podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 10s restarting failed container=etcd"), crashed)),
			true, true, "CrashLoopBackOff", []string{"exit code 1", `"error":"bad flag"`}},
		{"between two back-offs: terminated with an error", podWith("a", etcdState(crashed, none)),
			true, true, "CrashLoopBackOff", []string{"exit code 1", "bad flag"}},
		{"between two back-offs: running again, not started", podWith("a", func(p *corev1.Pod) {
			etcdState(running, crashed)(p)
			p.Status.ContainerStatuses[0].RestartCount = 3
		}), true, true, "CrashLoopBackOff", []string{"exit code 1"}},
		{"back after a crash and started, not ready (e.g. no quorum)", podWith("a", func(p *corev1.Pod) {
			etcdState(running, crashed)(p)
			yes := true
			p.Status.ContainerStatuses[0].Started = &yes
		}), false, false, "", nil},
		{"terminated cleanly, about to restart", podWith("a", etcdState(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}, none)),
			true, false, "ContainerCreating", nil},
		{"crash loop without a recorded termination", podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 10s restarting failed container=etcd"), none)),
			true, true, "CrashLoopBackOff", []string{"back-off 10s"}},
		{"restore init container crash-looping", podWith("a", func(p *corev1.Pod) {
			scheduled(p)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: render.RestoreContainerName,
				State: waiting("CrashLoopBackOff", "back-off"), LastTerminationState: crashed}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.ContainerName, State: waiting("PodInitializing", "")}}
		}), true, true, "CrashLoopBackOff", []string{"container restore", "exit code 1"}},
		{"evicted", podWith("a", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: ephemeral-storage."
		}), true, true, "Evicted", []string{"low on resource"}},
		{"failed without a reason", podWith("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), true, true, "PodFailed", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := memberPodIssue(c.pod, nil)
			if ok != c.wantIssue {
				t.Fatalf("issue = %+v, %v; want an issue: %v", got, ok, c.wantIssue)
			}
			if !ok {
				return
			}
			if got.Pod != c.pod.Name || got.Failing != c.failing || got.Reason != c.reason {
				t.Errorf("issue = %+v, want pod %s failing=%v reason %s", got, c.pod.Name, c.failing, c.reason)
			}
			for _, s := range c.msgContains {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
		})
	}
}

func TestPodsHealth(t *testing.T) {
	run := func(p *corev1.Pod) {
		etcdState(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.ContainerState{})(p)
	}
	unsched := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
	}
	pull := etcdState(waiting("ImagePullBackOff", "Back-off pulling image"), corev1.ContainerState{})
	pods := func(ps ...*corev1.Pod) map[string]*corev1.Pod {
		m := map[string]*corev1.Pod{}
		for _, p := range ps {
			m[p.Name] = p
		}
		return m
	}
	for _, c := range []struct {
		name        string
		pods        map[string]*corev1.Pod
		status      bool
		reason      string
		msgContains []string
	}{
		{"no pods", pods(), false, etcdv1beta2.ReasonNoPods, nil},
		{"all running", pods(podWith("a", run), podWith("b", run)), true, etcdv1beta2.ReasonPodsRunning, []string{"2 member pods"}},
		{"one starting", pods(podWith("a", run), podWith("b", func(*corev1.Pod) {})), false, etcdv1beta2.ReasonPodsStarting, []string{"b: Pending"}},
		{"a failure outranks pods merely starting", pods(podWith("a", func(*corev1.Pod) {}), podWith("b", unsched)), false, "Unschedulable",
			[]string{"b: Unschedulable: 0/3 nodes are available", "a: Pending"}},
		{"the first failing pod by name gives the reason, all are named", pods(podWith("c", unsched), podWith("b", pull), podWith("a", run)),
			false, "ImagePullBackOff", []string{"b: ImagePullBackOff: container etcd: Back-off pulling image", "c: Unschedulable"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := podsHealth(c.pods, nil)
			if h.Status != c.status || h.Reason != c.reason {
				t.Errorf("health = %+v, want status %v reason %s", h, c.status, c.reason)
			}
			for _, s := range c.msgContains {
				if !strings.Contains(h.Message, s) {
					t.Errorf("message %q does not contain %q", h.Message, s)
				}
			}
		})
	}

	// Events are keyed on which pods fail and why, not on messages that change with
	// every restart (back-off delays, log lines with timestamps).
	a := podsHealth(pods(podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 10s"), corev1.ContainerState{}))), nil)
	b := podsHealth(pods(podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 20s"), corev1.ContainerState{}))), nil)
	if a.Message == b.Message || a.EventKey != b.EventKey {
		t.Errorf("event keys %q / %q for messages %q / %q: want equal keys", a.EventKey, b.EventKey, a.Message, b.Message)
	}
	c := podsHealth(pods(podWith("a", pull)), nil)
	if c.EventKey == a.EventKey {
		t.Errorf("a new failure reason kept the event key %q", c.EventKey)
	}
}

// A crash loop passes through states that are not failures (restarting, briefly running);
// it is announced once, and its end only once the pods are Ready.
func TestPodsHealthEvents(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	r := newTestReconciler(t, Reconciler{Recorder: rec})
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "fatal"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	states := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"back-off", podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 1s"), crashed))},
		{"creating", podWith("a", etcdState(waiting("ContainerCreating", ""), crashed))},
		{"running, not started", podWith("a", etcdState(running, crashed))},
		{"terminated", podWith("a", etcdState(crashed, crashed))},
		{"back-off again", podWith("a", etcdState(waiting("CrashLoopBackOff", "back-off 2s"), crashed))},
		{"running, not ready", podWith("a", func(p *corev1.Pod) {
			etcdState(running, crashed)(p)
			yes := true
			p.Status.ContainerStatuses[0].Started = &yes
		})},
	}
	for _, s := range states {
		r.reportPodsHealth(c, map[string]*corev1.Pod{"a": s.pod}, nil, "t")
	}
	ready := podWith("a", func(p *corev1.Pod) {
		etcdState(running, crashed)(p)
		p.Status.ContainerStatuses[0].Ready = true
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	})
	r.reportPodsHealth(c, map[string]*corev1.Pod{"a": ready}, nil, "t")
	r.reportPodsHealth(c, map[string]*corev1.Pod{"a": ready}, nil, "t")
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "Warning CrashLoopBackOff") || !strings.HasPrefix(got[1], "Normal "+etcdv1beta2.ReasonPodsRunning) {
		t.Errorf("events %q, want one CrashLoopBackOff warning, then one PodsRunning", got)
	}
}
