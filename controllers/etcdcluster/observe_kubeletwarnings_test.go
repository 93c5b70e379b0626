package etcdcluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// eventsReader is a client.Reader that answers every List of events with evs and counts
// the lists.
type eventsReader struct {
	evs   []corev1.Event
	lists int
}

func (r *eventsReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not served")
}

func (r *eventsReader) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	r.lists++
	l.(*corev1.EventList).Items = append([]corev1.Event(nil), r.evs...)
	return nil
}

// TestKubeletWarningsReadOnlyForPodsSetUpForLong: the events of a pod bound moments ago
// are not read (a fleet created at once read each namespace's events several times per
// pod); the reconcile is told when that pod is due, and a pod set up for longer than
// setupWarningAfter gets its kubelet warning as before.
func TestKubeletWarningsReadOnlyForPodsSetUpForLong(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	settingUp := func(name string, boundAgo time.Duration) *corev1.Pod {
		return podWith(name, func(p *corev1.Pod) {
			p.UID = types.UID("uid-" + name)
			p.Spec.NodeName = "node-1"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-boundAgo))}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: waiting("ContainerCreating", "")}}
		})
	}
	rd := &eventsReader{evs: []corev1.Event{{Type: corev1.EventTypeWarning, Reason: "FailedMount", Message: `secret "absent-peer" not found`}}}
	r := &Reconciler{APIReader: rd, Now: func() time.Time { return now }, memory: newMemory()}

	young := settingUp("young", 3*time.Second)
	ws, due := r.kubeletWarnings(context.Background(), "ns/c", map[string]*corev1.Pod{"young": young})
	if rd.lists != 0 || ws != nil {
		t.Fatalf("a pod bound 3 s ago: %d event lists, warnings %v; want none", rd.lists, ws)
	}
	if want := now.Add(setupWarningAfter - 3*time.Second); !due.Equal(want) {
		t.Fatalf("due %v, want %v (when the pod has been set up for %v)", due, want, setupWarningAfter)
	}

	old := settingUp("old", setupWarningAfter+time.Second)
	ws, due = r.kubeletWarnings(context.Background(), "ns/c", map[string]*corev1.Pod{"young": young, "old": old})
	if rd.lists != 1 || ws["old"] == nil || ws["old"].Reason != "FailedMount" || ws["young"] != nil {
		t.Fatalf("%d event lists, warnings %v: want one list, old's FailedMount and nothing for young", rd.lists, ws)
	}
	if !due.Equal(now.Add(setupWarningAfter - 3*time.Second)) {
		t.Fatalf("due %v: want young's", due)
	}

	// Without a PodScheduled time, the pod's creation counts.
	unstamped := podWith("unstamped", func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
		p.Spec.NodeName = "node-1"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: waiting("ContainerCreating", "")}}
	})
	if ws, _ := r.kubeletWarnings(context.Background(), "ns/c", map[string]*corev1.Pod{"unstamped": unstamped}); rd.lists != 2 || ws["unstamped"] == nil {
		t.Fatalf("a pod created a minute ago without a PodScheduled time: %d lists, warnings %v; want it read", rd.lists, ws)
	}
}

// A starting pod's events are read again only after an interval that doubles from
// setupWarningAfter up to setupReadMaxEvery; in between, the last read's warning stands.
// A pod no longer being set up leaves nothing behind.
func TestKubeletWarningsReadAgainAfterAGrowingInterval(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	pod := podWith("stuck", func(p *corev1.Pod) {
		p.UID = "uid-stuck"
		p.Spec.NodeName = "node-1"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-setupWarningAfter))}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: waiting("ContainerCreating", "")}}
	})
	rd := &eventsReader{evs: []corev1.Event{{Type: corev1.EventTypeWarning, Reason: "FailedMount", Message: `secret "absent-peer" not found`}}}
	clock := now
	r := &Reconciler{APIReader: rd, Now: func() time.Time { return clock }, memory: newMemory()}
	pods := map[string]*corev1.Pod{"stuck": pod}

	var readsAt []time.Duration
	for step := time.Duration(0); step <= 4*time.Minute; step += time.Second {
		clock = now.Add(step)
		before := rd.lists
		ws, _ := r.kubeletWarnings(context.Background(), "ns/c", pods)
		if ws["stuck"] == nil || ws["stuck"].Reason != "FailedMount" {
			t.Fatalf("at +%v: warnings %v, want the FailedMount read before", step, ws)
		}
		if rd.lists != before {
			readsAt = append(readsAt, step)
		}
	}
	want := []time.Duration{0, 10 * time.Second, 30 * time.Second, 70 * time.Second, 130 * time.Second, 190 * time.Second}
	if !slices.Equal(readsAt, want) {
		t.Fatalf("events read at %v, want %v (intervals 10 s, 20 s, 40 s, then every %v)", readsAt, want, setupReadMaxEvery)
	}

	// Once the pod runs, nothing is kept of it.
	pod.Status.Phase = corev1.PodRunning
	r.kubeletWarnings(context.Background(), "ns/c", pods)
	if len(r.setupReads.m) != 0 {
		t.Fatalf("kept %v for a pod that is no longer being set up", r.setupReads.m)
	}
}
