package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// podIssue is what keeps one member pod from running etcd, in the words of the
// scheduler or the kubelet.
type podIssue struct {
	Pod     string
	Reason  string
	Message string
	// Failing: the scheduler or kubelet reported an error. Otherwise the pod is merely on
	// its way (not yet scheduled, volumes and containers being set up).
	Failing bool
}

// benignWaiting are the waiting reasons of a container that is on its way; every other
// waiting reason is an error (ErrImagePull, CreateContainerConfigError, CrashLoopBackOff,
// and whatever a newer kubelet or runtime adds).
var benignWaiting = map[string]bool{"": true, "ContainerCreating": true, "PodInitializing": true}

// maxIssueMessage bounds one pod's message in a condition: the scheduler's messages for
// large clusters and termination messages can be kilobytes long.
const maxIssueMessage = 512

// kubeletWarning is the newest Warning event the kubelet recorded for a pod that is still
// being set up: a volume that cannot be mounted (a TLS Secret that does not exist) or a
// sandbox that cannot be created is reported there, not in the container statuses,
// which just say ContainerCreating.
type kubeletWarning struct{ Reason, Message string }

// setupWarningReasons are the kubelet's event reasons for a pod it cannot set up.
var setupWarningReasons = map[string]bool{
	"FailedMount": true, "FailedAttachVolume": true, "FailedMapVolume": true, "FailedCreatePodSandBox": true,
}

// memberPodIssue says why p does not run its etcd container; false when it does, or when
// the pod is being deleted (then the operator, not the pod, decides what comes next).
// warning is the kubelet's newest set-up warning for p, if any.
func memberPodIssue(p *corev1.Pod, warning *kubeletWarning) (podIssue, bool) {
	if p.DeletionTimestamp != nil {
		return podIssue{}, false
	}
	issue := func(reason, msg string, failing bool) (podIssue, bool) {
		return podIssue{Pod: p.Name, Reason: reason, Message: cut(strings.TrimSpace(msg), maxIssueMessage), Failing: failing}, true
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		reason := p.Status.Reason
		if reason == "" {
			reason = "Pod" + string(p.Status.Phase)
		}
		return issue(reason, p.Status.Message, true)
	}
	if cond := podCondition(p, corev1.PodScheduled); p.Spec.NodeName == "" && (cond == nil || cond.Status != corev1.ConditionTrue) {
		if cond != nil && cond.Reason == corev1.PodReasonUnschedulable {
			return issue(cond.Reason, cond.Message, true)
		}
		return issue("Pending", "waiting to be scheduled", false)
	}
	// Init containers first: the etcd container waits for them.
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil {
			// Between two back-offs a crash-looping container is briefly terminated, or
			// running again without having started: still the same crash loop, not a pod
			// that recovered and failed anew.
			if t := crashedNotBackYet(cs); t != nil {
				return issue("CrashLoopBackOff", crashMessage(cs.Name, t, ""), true)
			}
			continue
		}
		switch {
		case w.Reason == "CrashLoopBackOff":
			return issue(w.Reason, crashMessage(cs.Name, cs.LastTerminationState.Terminated, w.Message), true)
		case !benignWaiting[w.Reason]:
			return issue(w.Reason, fmt.Sprintf("container %s: %s", cs.Name, w.Message), true)
		case w.Message != "":
			// A kubelet that explains a wait is reporting an error it retries, e.g. a
			// Secret volume whose Secret does not exist.
			return issue(w.Reason, fmt.Sprintf("container %s: %s", cs.Name, w.Message), true)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return podIssue{}, false
		}
	}
	if warning != nil {
		return issue(warning.Reason, warning.Message, true)
	}
	return issue("ContainerCreating", "containers are being created", false)
}

// crashedNotBackYet returns the failed termination of a container that has not come
// back from it: terminated with an error, or restarted after one and not yet past its
// startup probe. nil for a container that is up, or never failed.
func crashedNotBackYet(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if t := cs.State.Terminated; t != nil {
		if t.ExitCode != 0 {
			return t
		}
		return nil
	}
	started := cs.Started != nil && *cs.Started
	if t := cs.LastTerminationState.Terminated; cs.State.Running != nil && !started && !cs.Ready && t != nil && t.ExitCode != 0 {
		return t
	}
	return nil
}

// crashMessage describes a crash-looping container by its last failed termination,
// which says why it exits; the back-off message (the fallback) only says when it is
// retried.
func crashMessage(container string, t *corev1.ContainerStateTerminated, backoff string) string {
	if t == nil {
		return fmt.Sprintf("container %s: %s", container, backoff)
	}
	msg := fmt.Sprintf("container %s keeps exiting: last exit code %d (%s)", container, t.ExitCode, t.Reason)
	if l := render.LastMessageLine(t.Message); l != "" {
		msg += ": " + l
	}
	return msg
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// podsHealthReport is the PodsHealthy condition of a cluster, plus the key that decides
// when an event is due.
type podsHealthReport struct {
	Status          bool
	Reason, Message string
	// EventKey names the failing pods and their reasons, without messages: a crash loop
	// changes its message at every restart but deserves one event, not one per restart.
	EventKey string
	// Failing is true when at least one pod reports an error.
	Failing bool
}

// maxHealthMessage bounds the whole condition message.
const maxHealthMessage = 4096

// podsHealth summarises the member pods: every one running etcd, or which ones do not
// and why, failures first. The reason is that of the first failing pod by name.
// warnings are the kubelet's set-up warnings by pod name.
func podsHealth(pods map[string]*corev1.Pod, warnings map[string]*kubeletWarning) podsHealthReport {
	if len(pods) == 0 {
		return podsHealthReport{Reason: etcdv1beta2.ReasonNoPods, Message: "the cluster has no member pods"}
	}
	var failing, starting []podIssue
	for _, p := range pods {
		if is, ok := memberPodIssue(p, warnings[p.Name]); ok && is.Failing {
			failing = append(failing, is)
		} else if ok {
			starting = append(starting, is)
		}
	}
	byName := func(s []podIssue) {
		sort.Slice(s, func(i, j int) bool { return s[i].Pod < s[j].Pod })
	}
	byName(failing)
	byName(starting)
	if len(failing) == 0 && len(starting) == 0 {
		return podsHealthReport{Status: true, Reason: etcdv1beta2.ReasonPodsRunning,
			Message: fmt.Sprintf("%d member pods run etcd", len(pods)), EventKey: etcdv1beta2.ReasonPodsRunning}
	}
	r := podsHealthReport{Reason: etcdv1beta2.ReasonPodsStarting, Failing: len(failing) > 0}
	if r.Failing {
		r.Reason = failing[0].Reason
	}
	var parts, keys []string
	for _, is := range append(failing, starting...) {
		parts = append(parts, fmt.Sprintf("%s: %s: %s", is.Pod, is.Reason, is.Message))
		if is.Failing {
			keys = append(keys, is.Pod+"="+is.Reason)
		}
	}
	r.Message = cut(strings.Join(parts, "; "), maxHealthMessage)
	r.EventKey = r.Reason + " " + strings.Join(keys, ",")
	return r
}
