package render

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestLastMessageLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"one":                           "one",
		"first\nlast failure  \n\n":     "last failure",
		strings.Repeat("x", 600) + "\n": strings.Repeat("x", 512) + "...",
	} {
		if got := LastMessageLine(in); got != want {
			t.Errorf("LastMessageLine(%.20q) = %.20q, want %.20q", in, got, want)
		}
	}
}

// A check pod's message says its phase, its reason and why it is not scheduled; a pod
// scheduled says nothing of scheduling.
func TestPodStatusParts(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Reason: "Evicted", Message: "low on disk",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available"}}}}
	want := []string{"phase Pending", "Evicted: low on disk", "not scheduled: 0/3 nodes are available"}
	if got := PodStatusParts(pod); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	if got := PodStatusParts(pod); !slices.Equal(got, []string{"phase Running"}) {
		t.Errorf("scheduled, running pod: got %q", got)
	}
}
