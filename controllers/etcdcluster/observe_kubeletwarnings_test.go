package etcdcluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetupWarning(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(1_700_000_000+int64(s), 0)) }
	ev := func(typ, reason, msg string, last int) corev1.Event {
		return corev1.Event{Type: typ, Reason: reason, Message: msg, LastTimestamp: at(last)}
	}
	for _, c := range []struct {
		name       string
		evs        []corev1.Event
		wantReason string
		wantMsg    string
	}{
		{"none", nil, "", ""},
		{"only normal events", []corev1.Event{ev(corev1.EventTypeNormal, "Scheduled", "assigned", 1), ev(corev1.EventTypeNormal, "Pulling", "pulling", 2)}, "", ""},
		{"a warning of another kind", []corev1.Event{ev(corev1.EventTypeWarning, "BackOff", "back-off", 3)}, "", ""},
		{"the newest set-up warning wins", []corev1.Event{
			ev(corev1.EventTypeWarning, "FailedMount", `MountVolume.SetUp failed for volume "peer-tls" : secret "absent-peer" not found`, 5),
			ev(corev1.EventTypeWarning, "FailedCreatePodSandBox", "sandbox failed", 2),
			ev(corev1.EventTypeNormal, "Scheduled", "assigned", 9),
		}, "FailedMount", "absent-peer"},
		{"every missing volume is named, whichever event came last", []corev1.Event{
			ev(corev1.EventTypeWarning, "FailedMount", `secret "absent-peer" not found`, 5),
			ev(corev1.EventTypeWarning, "FailedMount", `secret "absent-server" not found`, 6),
			ev(corev1.EventTypeWarning, "FailedMount", `secret "absent-peer" not found`, 4),
		}, "FailedMount", `secret "absent-server" not found; secret "absent-peer" not found`},
		{"an event with only an event time", []corev1.Event{
			ev(corev1.EventTypeWarning, "FailedMount", "old", 1),
			{Type: corev1.EventTypeWarning, Reason: "FailedAttachVolume", Message: "new", EventTime: metav1.NewMicroTime(time.Unix(1_700_000_100, 0))},
		}, "FailedAttachVolume", "new"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := setupWarning(c.evs)
			if c.wantReason == "" {
				if w != nil {
					t.Fatalf("warning %+v, want none", w)
				}
				return
			}
			if w == nil || w.Reason != c.wantReason || !strings.Contains(w.Message, c.wantMsg) {
				t.Fatalf("warning %+v, want %s mentioning %q", w, c.wantReason, c.wantMsg)
			}
		})
	}
}

// A pod the kubelet cannot set up reads "ContainerCreating" in its statuses; with the
// kubelet's FailedMount warning it is a failing pod, in the kubelet's words.
func TestSetupWarningMakesPodFailing(t *testing.T) {
	creating := podWith("a", func(p *corev1.Pod) {
		scheduled(p)
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: waiting("ContainerCreating", "")}}
	})
	if !beingSetUp(creating) {
		t.Fatal("a scheduled pending pod with a ContainerCreating container is being set up")
	}
	is, ok := memberPodIssue(creating, nil)
	if !ok || is.Failing || is.Reason != "ContainerCreating" {
		t.Fatalf("without a warning: %+v, want a pod that is starting", is)
	}
	w := &kubeletWarning{Reason: "FailedMount", Message: `secret "absent-peer" not found`}
	is, ok = memberPodIssue(creating, w)
	if !ok || !is.Failing || is.Reason != "FailedMount" || !strings.Contains(is.Message, "absent-peer") {
		t.Fatalf("with a FailedMount warning: %+v, want a failing pod naming the secret", is)
	}
	h := podsHealth(map[string]*corev1.Pod{"a": creating}, map[string]*kubeletWarning{"a": w})
	if h.Status || !h.Failing || h.Reason != "FailedMount" {
		t.Fatalf("podsHealth = %+v, want failing with FailedMount", h)
	}

	running := podWith("b", func(p *corev1.Pod) {
		scheduled(p)
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	if beingSetUp(running) {
		t.Error("a running pod is not being set up: its old warnings must not be read")
	}
	unscheduled := podWith("c", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	if beingSetUp(unscheduled) {
		t.Error("a pod on no node is the scheduler's, not the kubelet's")
	}
}
