//go:build integration

package etcdrestore

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestCheckPodAdmittedUnderRestrictedPodSecurity creates snapshot check pods (a Secret's
// credentials with an encryption key, and the pod's own identity) in a namespace that
// enforces the Pod Security "restricted" profile, on a real API server, which also
// validates their resources (limits at least the requests).
func TestCheckPodAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	fixture.AdmittedUnderRestricted(t, func(ns string) map[string]*corev1.Pod {
		pods := map[string]*corev1.Pod{}
		for name, s3 := range map[string]*etcdv1beta2.S3BackupSource{
			"secret":  {Path: "bucket/key", AWSSecret: "aws", EncryptionKeySecret: "key", Endpoint: "http://minio:9000", ForcePathStyle: true},
			"ambient": {Path: "bucket/key", CredentialsSource: etcdv1beta2.S3CredentialsEnvironment},
		} {
			pod, err := render.SnapshotCheckPod(render.SnapshotCheckSpec{Name: render.SnapshotCheckPodName(name, checkPodSuffix), Namespace: ns, Owner: name,
				OperatorImage: "op:v1", S3: s3, MaxBytes: 64 << 20, Timeout: time.Minute, Deadline: 3 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			pods[name+" check pod"] = pod
		}
		return pods
	})
}
