// Package snapshotcheck runs the snapshot checks a member's restore step makes (the
// stored SHA-256, etcd's integrity hash, bbolt's consistency, every key read) on a
// tenant's stored backup outside the operator's process: in a pod of the operator's
// image (render.SnapshotCheckPod) in the tenant's namespace, whose result is read from
// its termination message. The pod's report is the tenant's to forge, so Confirm accepts
// a passed check only when the object's SHA-256, as the operator reads it itself
// (backup.HashObject: streamed, bounded, nothing stored or parsed), is the one the pod
// reported. The EtcdRestore controller and the cluster controller's total-loss restore
// both check this way; neither ever opens a tenant's snapshot as bbolt.
package snapshotcheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

const (
	// Timeout bounds a check pod's work and the operator's own read of the object.
	Timeout = 10 * time.Minute
	// StartGrace is the pod's time to be scheduled and pull the image.
	StartGrace = 2 * time.Minute
	// DeadlineSlack is how long past the pod's deadline the operator waits for the
	// kubelet's report before it gives the pod up itself.
	DeadlineSlack = 30 * time.Second
	// AnnotationStarted on a check pod is when the operator created it.
	AnnotationStarted = "etcd.database.coreos.com/check-started"
)

// Spec is the check pod named name in namespace of the object s3 names (an exact
// <bucket>/<key>); maxBytes is the operator's --max-backup-bytes (0: the default).
func Spec(name, namespace, owner, operatorImage string, s3 *etcdv1beta2.S3BackupSource, maxBytes int64) render.SnapshotCheckSpec {
	if maxBytes <= 0 {
		maxBytes = backup.DefaultMaxObjectBytes
	}
	return render.SnapshotCheckSpec{
		Name: name, Namespace: namespace, Owner: owner, OperatorImage: operatorImage, S3: s3, MaxBytes: maxBytes,
		Timeout: Timeout, Deadline: Timeout + StartGrace,
	}
}

// Is says whether pod is the check the operator renders for spec: the operator's image
// running exactly the check of that object, and nothing else. Any other pod of that name
// is never read.
func Is(pod *corev1.Pod, spec render.SnapshotCheckSpec) bool {
	args, _, _, err := render.SnapshotCheckArgs(spec)
	if err != nil || len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		return false
	}
	c := pod.Spec.Containers[0]
	return c.Name == render.SnapshotCheckContainer && c.Image == spec.OperatorImage &&
		slices.Equal(c.Command, []string{render.OperatorCommand}) && slices.Equal(c.Args, args)
}

// Started is when the operator created the pod (its annotation), else its creation.
func Started(pod *corev1.Pod) time.Time {
	if t, err := time.Parse(time.RFC3339, pod.Annotations[AnnotationStarted]); err == nil {
		return t
	}
	return pod.CreationTimestamp.Time
}

// Deadline is when the operator gives a pod of spec up: its deadline plus the slack.
func Deadline(pod *corev1.Pod, spec render.SnapshotCheckSpec) time.Time {
	return Started(pod).Add(spec.Deadline + DeadlineSlack)
}

// Outcome reads a check pod's result from its container's termination message. done
// is false while it runs and the deadline has not passed; a pod that failed without a
// result (evicted, killed at its deadline, out of memory, a crash in the parser) or is
// past its deadline is a failure (VerificationFailed) saying what happened to it.
func Outcome(pod *corev1.Pod, pastDeadline bool) (restore.CheckResult, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if cs.Name != render.SnapshotCheckContainer || t == nil {
			continue
		}
		res, err := restore.ParseCheckResult(t.Message)
		if err != nil {
			msg := fmt.Sprintf("the snapshot check ended with exit code %d (%s) without a result", t.ExitCode, t.Reason)
			if m := render.LastMessageLine(t.Message); m != "" {
				msg += ": " + m
			}
			return restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed, Error: msg}, true
		}
		if res.Reason == "" && t.ExitCode != 0 {
			res.Reason, res.Error = etcdv1beta2.ReasonVerificationFailed, fmt.Sprintf("the snapshot check exited with code %d", t.ExitCode)
		}
		return res, true
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || pastDeadline {
		what := "did not finish in time"
		if pod.Status.Phase == corev1.PodFailed {
			what = "failed"
		}
		return restore.CheckResult{Reason: etcdv1beta2.ReasonVerificationFailed,
			Error: fmt.Sprintf("the snapshot check pod %s %s: %s", pod.Name, what, podState(pod))}, true
	}
	return restore.CheckResult{}, false
}

// podState describes a pod that did not report: its phase and reason, and what its
// container waits on, in the kubelet's words.
func podState(pod *corev1.Pod) string {
	parts := render.PodStatusParts(pod)
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// Confirm (Hasher.Confirm, hasher.go) turns a finished check of key (named loc in
// messages) into the object's description and SHA-256, or the failure to report as a
// *backupstorage.Error: the pod's own failure, or a passed check whose SHA-256 is not the
// object's as the operator reads it (replaced between the two reads, or a report that is
// not the check's). The operator's read runs apart from the reconcile workers.

// reported is the pod's own failure, or a report that is not a check of key.
func reported(key, loc string, res restore.CheckResult) error {
	if res.Reason != "" {
		return &backupstorage.Error{Reason: res.Reason, Err: fmt.Errorf("the snapshot check of %s failed: %s", loc, res.Error)}
	}
	if res.Key != key || len(res.SHA256) != 64 {
		return &backupstorage.Error{Reason: etcdv1beta2.ReasonVerificationFailed,
			Err: fmt.Errorf("the snapshot check pod reported object %q sha256 %q, not a check of %s", res.Key, res.SHA256, loc)}
	}
	return nil
}

// compare judges a passed check by the operator's own read of the object.
func compare(h Hashed, loc string, res restore.CheckResult) (backup.Object, string, error) {
	obj, sum, err := h.Obj, h.SHA256, h.Err
	if _, ok := errors.AsType[*hashTimeout](err); ok {
		return obj, "", &backupstorage.Error{Reason: etcdv1beta2.ReasonTimeout, Err: err}
	}
	switch {
	case errors.Is(err, backup.ErrChecksumMismatch):
		return obj, "", &backupstorage.Error{Reason: etcdv1beta2.ReasonChecksumMismatch, Err: err}
	case err != nil:
		return obj, "", &backupstorage.Error{Reason: backupstorage.Reason(err), Err: fmt.Errorf("the operator's own read of %s: %w", loc, err)}
	case !strings.EqualFold(sum, res.SHA256):
		return obj, "", &backupstorage.Error{Reason: etcdv1beta2.ReasonChecksumMismatch,
			Err: fmt.Errorf("%s: the snapshot check pod checked bytes with sha256 %s, the operator read sha256 %s: the object changed between the two reads, or the report is not the check's", loc, res.SHA256, sum)}
	}
	return obj, sum, nil
}
