package etcdrestore

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// runCheckPods plays the kubelet for the snapshot check pods that have not run: it reads
// the object the pod's arguments name, with the Secrets its volumes name, runs the
// check the pod's program runs (restore.CheckSnapshot) and writes its result as the
// container's termination message. It returns how many it ran.
func (f *restoreFixture) runCheckPods(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := f.c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, ok := p.Labels[render.LabelSnapshotCheck]; !ok || len(p.Status.ContainerStatuses) > 0 {
			continue
		}
		n++
		res := runCheck(t, f, p)
		exit, phase := int32(0), corev1.PodSucceeded
		if res.Reason != "" {
			exit, phase = 1, corev1.PodFailed
		}
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.SnapshotCheckContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: string(res.Encode())}}}}
		if err := f.c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// runCheck runs the check pod p's program in-process, as the kubelet would in the pod.
func runCheck(t *testing.T, f *restoreFixture, p *corev1.Pod) restore.VerifyResult {
	t.Helper()
	c := p.Spec.Containers[0]
	if c.Image != f.r.OperatorImage || len(c.Args) < 2 || c.Args[0] != "verify" || c.Args[1] != "snapshot" {
		t.Fatalf("check pod %s runs %s %v, not the operator's snapshot check", p.Name, c.Image, c.Args)
	}
	src := &etcdv1beta2.S3BackupSource{}
	for _, a := range c.Args[2:] {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--s3-path":
			src.Path = v
		case "--s3-endpoint":
			src.Endpoint = v
		case "--s3-force-path-style":
			src.ForcePathStyle = true
		case "--s3-ambient-credentials":
			src.CredentialsSource = etcdv1beta2.S3CredentialsEnvironment
		}
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil && v.Name == render.RestoreAWSVolumeName:
			src.AWSSecret = v.Secret.SecretName
		case v.Secret != nil && v.Name == render.RestoreKeyVolumeName:
			src.EncryptionKeySecret = v.Secret.SecretName
		}
	}
	bucket, key, err := backup.SplitS3Path(src.Path)
	if err != nil {
		t.Fatal(err)
	}
	store, err := f.r.S3Access.Open(context.Background(), f.c, p.Namespace, src, bucket)
	if err != nil {
		return restore.VerifyResult{Reason: etcdv1beta2.ReasonSecretError, Error: err.Error()}
	}
	return restore.CheckSnapshot(context.Background(), store, key, t.TempDir())
}
