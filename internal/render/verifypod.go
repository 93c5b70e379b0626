package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
	cmdverify "github.com/etcd-operator/etcd-operator/internal/cmd/verify"
)

// A verification pod restores one backup into a throwaway one-member etcd and checks it:
//
//   - init container VerifyRestoreContainer (the operator's image, `verify restore`):
//     download or read the backup, check it as a restore does, restore it into an
//     emptyDir, and write what the member must serve beside the data directory;
//   - container VerifyEtcdContainer (the backup's etcd version): etcd on that data,
//     listening on the pod's loopback only, so nothing outside the pod can reach it;
//   - container VerifyCheckContainer (the operator's image, `verify check`): wait for etcd
//     and compare its revision and key count with the expectation.
//
// The restore and check steps report a JSON result as their termination message; the
// operator reads it and deletes the pod. No Service selects the pod and it carries none of
// a cluster's labels.
const (
	VerifyRestoreContainer = "restore"
	VerifyEtcdContainer    = "etcd"
	VerifyCheckContainer   = "check"
	// LabelVerifyBackup on a verification pod holds its EtcdBackup's name.
	LabelVerifyBackup = "etcd.database.coreos.com/backup-verify"

	verifyDataVolume = "verify-data"
	verifyDataMount  = "/var/etcd"
	verifyDataDir    = verifyDataMount + "/data"
	// The expectation (the object's key, SHA-256 and revision, which the operator signs
	// when the verification passes) is on a volume of its own that only the operator's
	// two steps mount: the etcd container runs an image the tenant chose
	// (spec.repository) and could otherwise rewrite it before the check step reports it.
	verifyExpectVolume = "verify-expect"
	verifyExpectMount  = "/var/etcd-expect"
	verifyExpectFile   = verifyExpectMount + "/expect.json"
	verifyMember       = "verify"
	verifyClientURL    = "http://127.0.0.1:2379"
	verifyPeerURL      = "http://127.0.0.1:2380"
)

// VerifyPodSpec is what one verification needs.
type VerifyPodSpec struct {
	// Backup is the EtcdBackup's name; the pod is in its namespace.
	Backup, Namespace string
	// OperatorImage runs the restore and check steps; EtcdImage the member.
	OperatorImage, EtcdImage string
	// S3 (Path "<bucket>/<key>") or PVC (Path below the claim) names the backup.
	S3  *v1beta2.S3BackupSource
	PVC *v1beta2.PVCBackupSource
	// Latest verifies the newest periodic backup of the path instead of the path itself.
	Latest bool
	// RestoreTimeout bounds the restore step, StartTimeout the wait for etcd to serve.
	RestoreTimeout, StartTimeout time.Duration
	// Deadline is the pod's activeDeadlineSeconds: the kubelet stops it after that.
	Deadline time.Duration
	// Inherit is what the pod takes from the cluster's member pods (InheritedFrom).
	Inherit Inherited
}

// VerifyPodName is <backup>-verify, shortened with a hash to fit a DNS label. Member pods
// end in "-" and eight base-36 characters, backup pods in "-backup": no collision.
func VerifyPodName(backup string) string {
	name := backup + "-verify"
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(backup))
	return strings.TrimRight(backup[:45], "-.") + "-verify-" + hex.EncodeToString(sum[:])[:10]
}

// VerifyPod renders the verification pod of s.
func VerifyPod(s VerifyPodSpec) (*corev1.Pod, error) {
	if strings.TrimSpace(s.OperatorImage) == "" || strings.TrimSpace(s.EtcdImage) == "" {
		return nil, errors.New("verification pod: operator and etcd images are required")
	}
	src, mounts, volumes, err := verifySource(s)
	if err != nil {
		return nil, err
	}
	restoreArgs := append([]string{cmdverify.Subcommand}, cmdverify.RestoreArgs(cmdverify.RestoreOptions{
		Source: src, Name: verifyMember, PeerURL: verifyPeerURL, DataDir: verifyDataDir,
		ExpectFile: verifyExpectFile, Timeout: s.RestoreTimeout,
	})...)
	checkArgs := append([]string{cmdverify.Subcommand}, cmdverify.CheckArgs(cmdverify.CheckOptions{
		Endpoint: verifyClientURL, ExpectFile: verifyExpectFile, Timeout: s.StartTimeout,
	})...)
	data := corev1.VolumeMount{Name: verifyDataVolume, MountPath: verifyDataMount}
	dataRO := data
	dataRO.ReadOnly = true
	expect := corev1.VolumeMount{Name: verifyExpectVolume, MountPath: verifyExpectMount}
	expectRO := expect
	expectRO.ReadOnly = true
	spec, err := runOncePodSpec(s.Deadline)
	if err != nil {
		return nil, err
	}
	label := s.Backup
	if len(label) > 63 {
		label = VerifyPodName(s.Backup)
	}
	spec.InitContainers = []corev1.Container{{
		Name: VerifyRestoreContainer, Image: s.OperatorImage,
		Command: []string{OperatorCommand}, Args: restoreArgs,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             append(append([]corev1.VolumeMount{data}, mounts...), expect),
		SecurityContext:          ContainerSecurityContext(),
	}}
	spec.Containers = []corev1.Container{{
		Name: VerifyEtcdContainer, Image: s.EtcdImage,
		Command: []string{"/usr/local/bin/etcd"},
		Args: []string{
			"--name=" + verifyMember, "--data-dir=" + verifyDataDir,
			"--listen-client-urls=" + verifyClientURL, "--advertise-client-urls=" + verifyClientURL,
			"--listen-peer-urls=" + verifyPeerURL, "--initial-advertise-peer-urls=" + verifyPeerURL,
			"--initial-cluster=" + verifyMember + "=" + verifyPeerURL, "--initial-cluster-state=new",
			"--initial-cluster-token=" + verifyMember,
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{data},
		SecurityContext:          ContainerSecurityContext(),
	}, {
		Name: VerifyCheckContainer, Image: s.OperatorImage,
		Command: []string{OperatorCommand}, Args: checkArgs,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{expectRO},
		SecurityContext:          ContainerSecurityContext(),
	}}
	spec.Volumes = append(append([]corev1.Volume{{Name: verifyDataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, volumes...),
		corev1.Volume{Name: verifyExpectVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: VerifyPodName(s.Backup), Namespace: s.Namespace,
			Labels: map[string]string{LabelVerifyBackup: label, LabelApp: AppOperatorPod, "app.kubernetes.io/managed-by": "etcd-operator"},
		},
		Spec: spec,
	}
	s.Inherit.ApplyTo(&pod.Spec)
	return pod, nil
}

// verifySource is the restore step's backup source and the volume that holds the
// backup or its credentials, mounted read-only: a verification never changes a backup.
func verifySource(s VerifyPodSpec) (inpod.Source, []corev1.VolumeMount, []corev1.Volume, error) {
	src := inpod.Source{Latest: s.Latest}
	switch {
	case s.S3 != nil && s.PVC == nil:
		if b, k, ok := strings.Cut(s.S3.Path, "/"); !ok || b == "" || k == "" {
			return src, nil, nil, fmt.Errorf("verification pod: s3.path %q is not <bucket>/<key>", s.S3.Path)
		}
		if err := checkS3Credentials(s.S3); err != nil {
			return src, nil, nil, fmt.Errorf("verification pod: %w", err)
		}
		// An encrypted object must be bound to this EtcdBackup (see backupcrypt).
		src.S3Path, src.BackupNamespace, src.BackupName = s.S3.Path, s.Namespace, s.Backup
		var mounts []corev1.VolumeMount
		var volumes []corev1.Volume
		if s.S3.CredentialsSource == v1beta2.S3CredentialsEnvironment {
			// The pod's own identity, as the members' restore step uses it.
			src.S3Ambient = true
		} else {
			src.AWSSecretDir = RestoreAWSDir
			mounts = append(mounts, corev1.VolumeMount{Name: RestoreAWSVolumeName, MountPath: RestoreAWSDir, ReadOnly: true})
			volumes = append(volumes, corev1.Volume{Name: RestoreAWSVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.S3.AWSSecret}}})
		}
		src.S3Endpoint, src.S3ForcePathStyle = s.S3.Endpoint, s.S3.ForcePathStyle
		if s.S3.EncryptionKeySecret != "" {
			// Only the key item: nothing else the Secret may hold reaches the pod.
			src.EncryptionKeyFile = RestoreKeyDir + "/" + v1beta2.EncryptionKeySecretKey
			mounts = append(mounts, corev1.VolumeMount{Name: RestoreKeyVolumeName, MountPath: RestoreKeyDir, ReadOnly: true})
			volumes = append(volumes, corev1.Volume{Name: RestoreKeyVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: s.S3.EncryptionKeySecret,
				Items:      []corev1.KeyToPath{{Key: v1beta2.EncryptionKeySecretKey, Path: v1beta2.EncryptionKeySecretKey}},
			}}})
		}
		return src, mounts, volumes, nil
	case s.PVC != nil && s.S3 == nil:
		key, err := CleanBackupPath(s.PVC.Path)
		if err != nil || s.PVC.ClaimName == "" {
			return src, nil, nil, fmt.Errorf("verification pod: pvc %q path %q: %v", s.PVC.ClaimName, s.PVC.Path, err)
		}
		src.Dir, src.Key = RestoreBackupDir, key
		return src,
			[]corev1.VolumeMount{{Name: RestoreBackupVolumeName, MountPath: RestoreBackupDir, ReadOnly: true}},
			[]corev1.Volume{{Name: RestoreBackupVolumeName, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: s.PVC.ClaimName, ReadOnly: true}}}},
			nil
	}
	return src, nil, nil, errors.New("verification pod: give exactly one backup source, s3 or pvc")
}
