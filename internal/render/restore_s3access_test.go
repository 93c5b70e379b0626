package render

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// restoreStepOf renders one bootstrapping member restored from s3 and returns its pod
// and restore init container.
func restoreStepOf(t *testing.T, s3 v1beta2.S3BackupSource) (*corev1.Pod, corev1.Container) {
	t.Helper()
	c, step := restoredCluster(t, s3, testSHA)
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, ""), Restore: step})
	p := got.pods["example-0000"]
	if len(p.Spec.InitContainers) != 1 {
		t.Fatalf("init containers %+v", p.Spec.InitContainers)
	}
	return p, p.Spec.InitContainers[0]
}

func volumeNamed(p *corev1.Pod, name string) *corev1.Volume {
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	return nil
}

func mountNamed(c corev1.Container, name string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// An encrypted backup: the step gets only the key of the key Secret, read-only, and the
// flag that points at it.
func TestRestoreStepMountsTheEncryptionKey(t *testing.T) {
	p, ic := restoreStepOf(t, v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", EncryptionKeySecret: "backup-key"})
	if !slices.Contains(ic.Args, "--encryption-key-file="+RestoreKeyDir+"/"+v1beta2.EncryptionKeySecretKey) {
		t.Errorf("args %q lack the key file", ic.Args)
	}
	if m := mountNamed(ic, RestoreKeyVolumeName); m == nil || m.MountPath != RestoreKeyDir || !m.ReadOnly {
		t.Errorf("key mount %+v", m)
	}
	v := volumeNamed(p, RestoreKeyVolumeName)
	if v == nil || v.Secret == nil || v.Secret.SecretName != "backup-key" || len(v.Secret.Items) != 1 ||
		v.Secret.Items[0].Key != v1beta2.EncryptionKeySecretKey || v.Secret.Items[0].Path != v1beta2.EncryptionKeySecretKey {
		t.Errorf("key volume %+v", v)
	}
	if etcd := etcdContainer(t, p); mountNamed(etcd, RestoreKeyVolumeName) != nil {
		t.Error("etcd mounts the encryption key")
	}
	if volumeNamed(p, RestoreAWSVolumeName) == nil {
		t.Error("the awsSecret is still needed")
	}
	// Without a key Secret, nothing of the kind.
	p, ic = restoreStepOf(t, v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws"})
	if volumeNamed(p, RestoreKeyVolumeName) != nil || strings.Contains(strings.Join(ic.Args, " "), "--encryption-key-file") {
		t.Errorf("unencrypted restore mounts a key: %q", ic.Args)
	}
}

// Credentials source Environment: no Secret is mounted and the step uses the pod's own
// identity. IAM roles for service accounts need nothing from the chart: the platform's
// admission webhook adds the role, token file variable and token volume to every
// container of a pod whose service account is annotated (automountServiceAccountToken
// false does not stop it: its token is a volume of its own).
func TestRestoreStepWithThePodsOwnIdentity(t *testing.T) {
	p, ic := restoreStepOf(t, v1beta2.S3BackupSource{Path: "b/k", CredentialsSource: v1beta2.S3CredentialsEnvironment})
	if !slices.Contains(ic.Args, "--s3-ambient-credentials") || strings.Contains(strings.Join(ic.Args, " "), "--aws-secret-dir") {
		t.Errorf("args %q", ic.Args)
	}
	if volumeNamed(p, RestoreAWSVolumeName) != nil || mountNamed(ic, RestoreAWSVolumeName) != nil {
		t.Error("an awsSecret volume without an awsSecret")
	}
	for _, e := range ic.Env {
		if strings.HasPrefix(e.Name, "AWS_") {
			t.Errorf("the operator sets %s: that is the platform's (or the tenant's) to inject", e.Name)
		}
	}
}

func TestRestoreSourceCredentialsAreOneOrTheOther(t *testing.T) {
	for _, s3 := range []v1beta2.S3BackupSource{
		{Path: "b/k"},
		{Path: "b/k", AWSSecret: "aws", CredentialsSource: v1beta2.S3CredentialsEnvironment},
	} {
		if _, err := (RestoreSource{Restore: "r", S3: &s3}).Annotations(); err == nil {
			t.Errorf("%+v accepted", s3)
		}
	}
}

// An encrypted backup must be bound to the cluster's namespace and, when the operator
// proved the pin, to the pinned revision: the step is told both, so a backup moved there
// from another namespace or an older one put back under the key is refused.
func TestRestoreStepBindsTheEncryptedBackup(t *testing.T) {
	s3 := v1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", EncryptionKeySecret: "backup-key"}
	c, step := restoredCluster(t, s3, testSHA)
	step.Source.PinRevision = 42
	ic := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, ""), Restore: step}).pods["example-0000"].Spec.InitContainers[0]
	if !slices.Contains(ic.Args, "--backup-namespace="+c.Namespace) || c.Namespace == "" {
		t.Errorf("args %q lack --backup-namespace=%s", ic.Args, c.Namespace)
	}
	if strings.Contains(strings.Join(ic.Args, " "), "--backup-revision") {
		t.Errorf("args %q bind a revision the operator did not prove", ic.Args)
	}
	step.ChecksPassedForPin = true
	ic = mustRender(t, Input{Cluster: c, Members: bootstrap(c, 1, ""), Restore: step}).pods["example-0000"].Spec.InitContainers[0]
	if !slices.Contains(ic.Args, "--backup-revision=42") {
		t.Errorf("args %q lack --backup-revision=42", ic.Args)
	}
}
