package render

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The check pod reads the tenant's object with the operator's own bounds (size and
// inflation ratio), and is among the pods the operator's cache holds.
func TestSnapshotCheckPodIsBoundedAndOwned(t *testing.T) {
	s := SnapshotCheckSpec{Name: "r-check", Namespace: "team-a", Owner: "r", OperatorImage: "op:1",
		S3: &v1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: "aws"}, MaxBytes: 1 << 30,
		Timeout: time.Minute, Deadline: 2 * time.Minute}
	pod, err := SnapshotCheckPod(s)
	if err != nil {
		t.Fatal(err)
	}
	if args := pod.Spec.Containers[0].Args; !slices.Contains(args, "--max-object-bytes=1073741824") {
		t.Errorf("args %v: the check is not bounded by the operator's --max-backup-bytes", args)
	}
	if !OwnedSelector().Matches(labels.Set(pod.Labels)) {
		t.Errorf("labels %v are outside the operator's pod cache", pod.Labels)
	}
	if ps := pod.Spec; ps.RestartPolicy != corev1.RestartPolicyNever || *ps.ActiveDeadlineSeconds != 120 || *ps.AutomountServiceAccountToken || *ps.EnableServiceLinks || ps.SecurityContext == nil {
		t.Errorf("pod spec %+v: not a run-once pod bounded by the deadline, without API token, Service variables or securityContext", ps)
	}
}
