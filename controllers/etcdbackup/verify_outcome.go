package etcdbackup

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// verifyOutcomeResult is a verification's outcome: the step's result (Reason empty when
// the backup verified).
type verifyOutcomeResult struct {
	restore.CheckResult
}

// message says what was verified or what failed, naming the object.
func (o verifyOutcomeResult) message(location string) string {
	if o.Reason != "" {
		return fmt.Sprintf("verification of %s failed: %s", location, o.Error)
	}
	keys := "no key count was recorded with it, so only the revision was checked"
	if o.KeyCountChecked {
		keys = fmt.Sprintf("%d keys at that revision, as the cluster held when the backup was taken", o.KeyCount)
	}
	return fmt.Sprintf("%s restored into a one-member etcd, which served revision %d (recorded %d) with %s",
		location, o.ServedRevision, o.Revision, keys)
}

// verifyOutcome reads a verification pod's outcome from its containers' termination
// messages: the restore step's failure, else the check step's result. done is false while
// neither has ended and the deadline has not passed; past it, what the pod is stuck on
// becomes the failure.
func verifyOutcome(pod *corev1.Pod, pastDeadline bool) (verifyOutcomeResult, bool) {
	if t := terminated(pod.Status.InitContainerStatuses, render.VerifyRestoreContainer); t != nil && t.ExitCode != 0 {
		return stepResult(t, "the restore step"), true
	}
	if t := terminated(pod.Status.ContainerStatuses, render.VerifyCheckContainer); t != nil {
		out := stepResult(t, "the check step")
		if out.Reason == "" && t.ExitCode != 0 {
			out.Reason, out.Error = etcdv1beta2.ReasonVerificationFailed, fmt.Sprintf("the check step exited with code %d", t.ExitCode)
		}
		if out.Reason == etcdv1beta2.ReasonEtcdDidNotStart {
			if e := terminated(pod.Status.ContainerStatuses, render.VerifyEtcdContainer); e != nil && e.Message != "" {
				out.Error += "; etcd exited: " + render.LastMessageLine(e.Message)
			}
		}
		return out, true
	}
	if pod.Status.Phase == corev1.PodFailed || pastDeadline {
		return verifyOutcomeResult{restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed,
			Error: "the verification pod did not finish in time: " + stuckOn(pod)}}, true
	}
	return verifyOutcomeResult{}, false
}

// stepResult is the result a step wrote, or what its log's tail says when it died
// before writing one.
func stepResult(t *corev1.ContainerStateTerminated, step string) verifyOutcomeResult {
	r, err := restore.ParseCheckResult(t.Message)
	if err == nil {
		return verifyOutcomeResult{r}
	}
	msg := fmt.Sprintf("%s ended with exit code %d (%s) without a result", step, t.ExitCode, t.Reason)
	if t.Message != "" {
		msg += ": " + render.LastMessageLine(t.Message)
	}
	return verifyOutcomeResult{restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: msg}}
}

func terminated(sts []corev1.ContainerStatus, name string) *corev1.ContainerStateTerminated {
	for _, cs := range sts {
		if cs.Name == name {
			return cs.State.Terminated
		}
	}
	return nil
}

// stuckOn describes why a pod has not finished: its phase and reason, and each container
// that waits or ended, in the kubelet's words.
func stuckOn(pod *corev1.Pod) string {
	parts := render.PodStatusParts(pod)
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("container %s exited with code %d: %s", cs.Name, cs.State.Terminated.ExitCode, render.LastMessageLine(cs.State.Terminated.Message)))
		}
	}
	return strings.Join(parts, "; ")
}
