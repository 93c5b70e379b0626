//go:build integration

package etcdbackup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestVerifyPodAdmittedUnderRestrictedPodSecurity creates a verification pod (S3 and PVC)
// in a namespace that enforces the Pod Security "restricted" profile, on a real API server.
func TestVerifyPodAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	fixture.AdmittedUnderRestricted(t, func(ns string) map[string]*corev1.Pod {
		pods := map[string]*corev1.Pod{}
		for name, src := range map[string]render.VerifyPodSpec{
			"s3":  {S3: &etcdv1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: "aws"}, Latest: true},
			"pvc": {PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "db"}},
		} {
			src.Backup, src.Namespace, src.OperatorImage, src.EtcdImage = name, ns, "op:v1", "etcd:v3.6.16"
			src.RestoreTimeout, src.StartTimeout, src.Deadline = time.Minute, time.Minute, 3*time.Minute
			pod, err := render.VerifyPod(src)
			if err != nil {
				t.Fatal(err)
			}
			pods[name+" verification pod"] = pod
		}
		return pods
	})
}
