package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	cmdsnapshotcheck "github.com/etcd-operator/etcd-operator/internal/cmd/snapshotcheck"
)

// A snapshot check pod runs the checks a member's restore step makes before it writes a
// data directory (the stored SHA-256, etcd's integrity hash, bbolt's consistency and
// every key read: restore.CheckObject) on one stored backup, so that the operator never
// downloads or parses a tenant's snapshot in its own process. One container
// (SnapshotCheckContainer, the operator's image, `verify snapshot`) downloads the object
// into an emptyDir bounded like the container's ephemeral storage, checks it and writes a
// restore.CheckResult (the key, the SHA-256 of the bytes checked, the revision) as its
// termination message. The pod has CPU, memory and ephemeral-storage limits, a deadline,
// no service-account token and the restricted Pod Security profile; it carries no
// cluster's labels and no Service selects it.
const (
	SnapshotCheckContainer = "check"
	// LabelSnapshotCheck on a check pod says what it checks for (LabelValue of the
	// owner's name).
	LabelSnapshotCheck = "etcd.database.coreos.com/snapshot-check"

	snapshotCheckVolume = "check-data"
	snapshotCheckMount  = "/var/etcd-check"
	// snapshotCheckSlack is ephemeral storage beyond the largest backup: logs and the
	// program's own scratch.
	snapshotCheckSlack = 64 << 20
)

// SnapshotCheckSpec is what one check needs.
type SnapshotCheckSpec struct {
	// Name is the pod's name (SnapshotCheckPodName), Namespace the tenant's namespace.
	Name, Namespace string
	// Owner labels the pod (its EtcdRestore or EtcdCluster name).
	Owner string
	// OperatorImage runs the check: never an image the tenant chose.
	OperatorImage string
	// S3 names the object (Path "<bucket>/<key>", an exact key).
	S3 *v1beta2.S3BackupSource
	// MaxBytes is the largest backup the check may hold (the operator's
	// --max-backup-bytes): the emptyDir's size and the ephemeral-storage limit.
	MaxBytes int64
	// Timeout bounds the check itself; Deadline is the pod's activeDeadlineSeconds.
	Timeout, Deadline time.Duration
}

// SnapshotCheckPodName is <owner>-<suffix>, shortened with a hash to fit a DNS label.
func SnapshotCheckPodName(owner, suffix string) string {
	name := owner + "-" + suffix
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(owner))
	keep := 63 - len(suffix) - 12
	return strings.TrimRight(owner[:keep], "-.") + "-" + suffix + "-" + hex.EncodeToString(sum[:])[:10]
}

// SnapshotCheckArgs are the check container's arguments for s (what the operator
// compares a running pod against).
func SnapshotCheckArgs(s SnapshotCheckSpec) ([]string, []corev1.VolumeMount, []corev1.Volume, error) {
	if s.S3 == nil {
		return nil, nil, nil, errors.New("snapshot check pod: only S3 objects are checked")
	}
	src, mounts, volumes, err := verifySource(VerifyPodSpec{S3: s.S3})
	if err != nil {
		return nil, nil, nil, err
	}
	args := append([]string{cmdsnapshotcheck.Subcommand}, cmdsnapshotcheck.Args(cmdsnapshotcheck.Options{
		Source: src, DownloadDir: snapshotCheckMount, Timeout: s.Timeout, MaxObjectBytes: s.MaxBytes,
	})...)
	return args, mounts, volumes, nil
}

// SnapshotCheckPod renders the check pod of s.
func SnapshotCheckPod(s SnapshotCheckSpec) (*corev1.Pod, error) {
	if strings.TrimSpace(s.OperatorImage) == "" || s.Name == "" || s.Namespace == "" {
		return nil, errors.New("snapshot check pod: name, namespace and the operator image are required")
	}
	if s.MaxBytes <= 0 || s.Deadline <= 0 {
		return nil, errors.New("snapshot check pod: a size limit and a deadline are required")
	}
	args, mounts, volumes, err := SnapshotCheckArgs(s)
	if err != nil {
		return nil, err
	}
	spec, err := runOncePodSpec(s.Deadline)
	if err != nil {
		return nil, err
	}
	label := s.Owner
	if len(label) > 63 {
		label = s.Name
	}
	scratch := resource.NewQuantity(s.MaxBytes, resource.BinarySI)
	ephemeral := resource.NewQuantity(s.MaxBytes+snapshotCheckSlack, resource.BinarySI)
	spec.Containers = []corev1.Container{{
		Name: SnapshotCheckContainer, Image: s.OperatorImage,
		Command: []string{OperatorCommand}, Args: args,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             append([]corev1.VolumeMount{{Name: snapshotCheckVolume, MountPath: snapshotCheckMount}}, mounts...),
		SecurityContext:          ContainerSecurityContext(),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("100m"),
				corev1.ResourceMemory:           resource.MustParse("64Mi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("64Mi"),
			},
			// The database is read through a memory map: its pages are
			// page cache, reclaimed under the limit, not the program's heap.
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("1"),
				corev1.ResourceMemory:           resource.MustParse("512Mi"),
				corev1.ResourceEphemeralStorage: *ephemeral,
			},
		},
	}}
	spec.Volumes = append([]corev1.Volume{{Name: snapshotCheckVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: scratch}}}}, volumes...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace,
			// LabelApp as on the operator's other pods: its pod cache holds only those
			// (OwnedSelector), and the controllers wake on this pod's changes.
			Labels: map[string]string{LabelSnapshotCheck: label, "app.kubernetes.io/managed-by": "etcd-operator", LabelApp: AppOperatorPod},
		},
		Spec: spec,
	}, nil
}

// runOncePodSpec is the spec the operator's check pods (a backup's verification, a
// restore's snapshot check) start from: run once within deadline, never restarted, no API
// token nor Service variables, the restricted pod securityContext.
func runOncePodSpec(deadline time.Duration) (corev1.PodSpec, error) {
	podSC, err := PodSecurityContext(nil)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	return corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		ActiveDeadlineSeconds:        ptr.To(int64(deadline / time.Second)),
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext:              podSC,
	}, nil
}
