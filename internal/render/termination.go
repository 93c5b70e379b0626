package render

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// LastMessageLine is the last non-empty line of a container's termination message (the
// containers this package renders ask for the log's tail on error), cut to a length fit
// for a condition message.
func LastMessageLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 512 {
		l = l[:512] + "..."
	}
	return l
}

// PodStatusParts are a pod's phase, its reason and why it is not scheduled, in the
// kubelet's words: how a message on a check pod that did not finish opens (the caller
// adds its containers' states).
func PodStatusParts(pod *corev1.Pod) []string {
	parts := []string{"phase " + string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		parts = append(parts, pod.Status.Reason+": "+pod.Status.Message)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			parts = append(parts, "not scheduled: "+c.Message)
		}
	}
	return parts
}
