package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func verifySpec() VerifyPodSpec {
	return VerifyPodSpec{
		Backup: "nightly", Namespace: "ns", OperatorImage: "op:v1", EtcdImage: "repo/etcd:v3.6.16",
		S3:             &v1beta2.S3BackupSource{Path: "bucket/db/snap", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true},
		Latest:         true,
		RestoreTimeout: time.Minute, StartTimeout: 2 * time.Minute, Deadline: 5 * time.Minute,
	}
}

// TestVerifyPodS3: the restore step reads the S3 object with the awsSecret mounted
// read-only; etcd is the backup's version and listens on loopback only; the check reads
// the expectation the restore wrote; every container is "restricted".
func TestVerifyPodS3(t *testing.T) {
	p, err := VerifyPod(verifySpec())
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "nightly-verify" || p.Namespace != "ns" || p.Labels[LabelVerifyBackup] != "nightly" {
		t.Errorf("pod %s/%s labels %v", p.Namespace, p.Name, p.Labels)
	}
	if !OwnedSelector().Matches(labels.Set(p.Labels)) {
		t.Errorf("pod labels %v: the operator's cache (OwnedSelector) would not see it", p.Labels)
	}
	for k, v := range p.Labels {
		if IsReservedLabel(k) && !(k == LabelApp && v == AppOperatorPod) {
			t.Errorf("pod carries the cluster label %s: a Service or the cluster controller could select it", k)
		}
	}
	s := p.Spec
	if s.RestartPolicy != corev1.RestartPolicyNever || *s.ActiveDeadlineSeconds != 300 || *s.AutomountServiceAccountToken || *s.EnableServiceLinks {
		t.Errorf("pod spec %+v", s)
	}
	if len(s.InitContainers) != 1 || len(s.Containers) != 2 {
		t.Fatalf("containers: %d init, %d", len(s.InitContainers), len(s.Containers))
	}
	restore, etcd, check := s.InitContainers[0], s.Containers[0], s.Containers[1]
	wantArgs := []string{"verify", "restore", "--latest", "--s3-path=bucket/db/snap", "--backup-namespace=ns", "--backup-name=nightly", "--aws-secret-dir=" + RestoreAWSDir,
		"--s3-endpoint=http://minio:9000", "--s3-force-path-style", "--name=verify", "--peer-url=http://127.0.0.1:2380",
		"--data-dir=/var/etcd/data", "--expect-file=/var/etcd-expect/expect.json", "--timeout=1m0s"}
	if restore.Image != "op:v1" || restore.Command[0] != OperatorCommand || !slices.Equal(restore.Args, wantArgs) {
		t.Errorf("restore step %s %v %v", restore.Image, restore.Command, restore.Args)
	}
	if etcd.Image != "repo/etcd:v3.6.16" || etcd.Command[0] != "/usr/local/bin/etcd" {
		t.Errorf("etcd %s %v", etcd.Image, etcd.Command)
	}
	for _, a := range etcd.Args {
		if strings.Contains(a, "://") && !strings.Contains(a, "://127.0.0.1:") {
			t.Errorf("etcd flag %s is not loopback-only", a)
		}
	}
	if len(etcd.Ports) != 0 {
		t.Errorf("etcd declares ports %v", etcd.Ports)
	}
	if check.Image != "op:v1" || !slices.Contains(check.Args, "--expect-file=/var/etcd-expect/expect.json") || !slices.Contains(check.Args, "--timeout=2m0s") {
		t.Errorf("check %s %v", check.Image, check.Args)
	}
	// The expectation the operator signs is on a volume the etcd container (the tenant's
	// image) does not mount: restore writes it, check reads it, nothing else sees it.
	for _, c := range []struct {
		c     corev1.Container
		mount bool
		ro    bool
	}{{restore, true, false}, {etcd, false, false}, {check, true, true}} {
		var got *corev1.VolumeMount
		for i := range c.c.VolumeMounts {
			if c.c.VolumeMounts[i].Name == verifyExpectVolume {
				got = &c.c.VolumeMounts[i]
			}
		}
		if (got != nil) != c.mount || got != nil && got.ReadOnly != c.ro {
			t.Errorf("container %s: expectation mount %+v, want mounted %v read-only %v", c.c.Name, got, c.mount, c.ro)
		}
		for _, m := range c.c.VolumeMounts {
			if c.c.Name == VerifyCheckContainer && m.Name == verifyDataVolume {
				t.Errorf("check step mounts the data volume the etcd container writes")
			}
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range restore.VolumeMounts {
		mounts[m.Name] = m
	}
	if aws := mounts[RestoreAWSVolumeName]; !aws.ReadOnly || aws.MountPath != RestoreAWSDir {
		t.Errorf("awsSecret mount %+v", aws)
	}
	if !check.VolumeMounts[0].ReadOnly {
		t.Error("the check step can write the data")
	}
	if v := s.Volumes[1]; v.Secret == nil || v.Secret.SecretName != "aws" {
		t.Errorf("awsSecret volume %+v", v)
	}
	psc := s.SecurityContext
	if psc == nil || !*psc.RunAsNonRoot || *psc.RunAsUser == 0 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	for _, c := range append(s.InitContainers, s.Containers...) {
		if !equality.Semantic.DeepEqual(c.SecurityContext, ContainerSecurityContext()) {
			t.Errorf("container %s securityContext %+v", c.Name, c.SecurityContext)
		}
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("container %s: termination message policy %s", c.Name, c.TerminationMessagePolicy)
		}
	}
}

// TestVerifyPodPVC: the claim is mounted read-only and the path below it cleaned.
func TestVerifyPodPVC(t *testing.T) {
	s := verifySpec()
	s.S3, s.Latest = nil, false
	s.PVC = &v1beta2.PVCBackupSource{ClaimName: "backups", Path: "/../db/snap"}
	p, err := VerifyPod(s)
	if err != nil {
		t.Fatal(err)
	}
	args := p.Spec.InitContainers[0].Args
	if !slices.Contains(args, "--dir="+RestoreBackupDir) || !slices.Contains(args, "--key=db/snap") || slices.Contains(args, "--latest") {
		t.Errorf("restore args %v", args)
	}
	v := p.Spec.Volumes[1]
	if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "backups" || !v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("claim volume %+v", v)
	}
	if m := p.Spec.InitContainers[0].VolumeMounts[1]; !m.ReadOnly {
		t.Errorf("claim mount %+v", m)
	}
}

func TestVerifyPodRefusesIncompleteInput(t *testing.T) {
	for name, mutate := range map[string]func(*VerifyPodSpec){
		"no etcd image":     func(s *VerifyPodSpec) { s.EtcdImage = "" },
		"no source":         func(s *VerifyPodSpec) { s.S3 = nil },
		"two sources":       func(s *VerifyPodSpec) { s.PVC = &v1beta2.PVCBackupSource{ClaimName: "c", Path: "p"} },
		"bucket only":       func(s *VerifyPodSpec) { s.S3.Path = "bucket" },
		"no awsSecret":      func(s *VerifyPodSpec) { s.S3.AWSSecret = "" },
		"claim root":        func(s *VerifyPodSpec) { s.S3, s.PVC = nil, &v1beta2.PVCBackupSource{ClaimName: "c", Path: "/"} },
		"no operator image": func(s *VerifyPodSpec) { s.OperatorImage = " " },
	} {
		s := verifySpec()
		mutate(&s)
		if _, err := VerifyPod(s); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// TestVerifyPodName fits a DNS label and never looks like a member's or backup pod's name.
func TestVerifyPodName(t *testing.T) {
	long := strings.Repeat("b", 70)
	for _, backup := range []string{"nightly", long, strings.Repeat("c", 57)} {
		n := VerifyPodName(backup)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("%s: %v", n, errs)
		}
		last := n[strings.LastIndex(n, "-")+1:]
		if len(last) == 8 || strings.HasSuffix(n, "-backup") {
			t.Errorf("%s could be a member's (-<8 chars>) or a backup pod's name", n)
		}
	}
	if VerifyPodName(long) == VerifyPodName(long+"x") {
		t.Error("two long names share a pod name")
	}
}

// TestVerifyPodEncryptedAndAmbient: an encrypted backup is verified with only the key
// item of its key Secret mounted read-only; with credentials source Environment the
// restore step uses the pod's own identity and no awsSecret is mounted; both at once are
// refused.
func TestVerifyPodEncryptedAndAmbient(t *testing.T) {
	spec := verifySpec()
	spec.S3.EncryptionKeySecret = "backup-key"
	p, err := VerifyPod(spec)
	if err != nil {
		t.Fatal(err)
	}
	restore := p.Spec.InitContainers[0]
	if !slices.Contains(restore.Args, "--encryption-key-file="+RestoreKeyDir+"/"+v1beta2.EncryptionKeySecretKey) {
		t.Errorf("restore step args %v lack the key file", restore.Args)
	}
	var keyVol *corev1.Volume
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == RestoreKeyVolumeName {
			keyVol = &p.Spec.Volumes[i]
		}
	}
	if keyVol == nil || keyVol.Secret == nil || keyVol.Secret.SecretName != "backup-key" ||
		len(keyVol.Secret.Items) != 1 || keyVol.Secret.Items[0].Key != v1beta2.EncryptionKeySecretKey {
		t.Errorf("key volume %+v", keyVol)
	}
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == RestoreKeyVolumeName {
				t.Errorf("container %s mounts the encryption key; only the restore step may", c.Name)
			}
		}
	}
	for _, m := range restore.VolumeMounts {
		if m.Name == RestoreKeyVolumeName && !m.ReadOnly {
			t.Error("the key is mounted writable")
		}
	}

	spec = verifySpec()
	spec.S3.AWSSecret, spec.S3.CredentialsSource = "", v1beta2.S3CredentialsEnvironment
	p, err = VerifyPod(spec)
	if err != nil {
		t.Fatal(err)
	}
	if args := p.Spec.InitContainers[0].Args; !slices.Contains(args, "--s3-ambient-credentials") ||
		slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--aws-secret-dir") }) {
		t.Errorf("ambient restore step args %v", args)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == RestoreAWSVolumeName {
			t.Error("an awsSecret volume is mounted for credentials source Environment")
		}
	}

	spec.S3.AWSSecret = "aws"
	if _, err := VerifyPod(spec); err == nil {
		t.Error("awsSecret together with credentials source Environment accepted")
	}
}
