package restoreorigin

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

func TestCheck(t *testing.T) {
	s3 := &etcdv1beta2.S3BackupSource{Path: "bk/main.db", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}
	s3Restore := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u-1"},
		Spec: etcdv1beta2.EtcdRestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "main"},
			BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
			RestoreSource:     etcdv1beta2.RestoreSource{S3: s3},
		},
	}
	pvcRestore := s3Restore.DeepCopy()
	pvcRestore.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypePVC
	pvcRestore.Spec.S3 = nil
	pvcRestore.Spec.PVC = &etcdv1beta2.PVCBackupSource{ClaimName: "claim", Path: "bk/main.db"}

	withS3 := func(edit func(*etcdv1beta2.S3BackupSource)) *render.RestoreSource {
		c := *s3
		edit(&c)
		return &render.RestoreSource{Restore: "r", UID: "u-1", S3: &c}
	}
	runAnnotationCases(t, Check, []annotationCase{
		{"exact object", s3Restore, "main", withS3(func(*etcdv1beta2.S3BackupSource) {}), true},
		{"a periodic backup of the path", s3Restore, "main", withS3(func(s *etcdv1beta2.S3BackupSource) { s.Path = "bk/main.db_v42_2026-01-02-03:04:05" }), true},
		{"another bucket", s3Restore, "main", withS3(func(s *etcdv1beta2.S3BackupSource) { s.Path = "other/main.db" }), false},
		{"another secret", s3Restore, "main", withS3(func(s *etcdv1beta2.S3BackupSource) { s.AWSSecret = "stolen" }), false},
		{"another key secret", s3Restore, "main", withS3(func(s *etcdv1beta2.S3BackupSource) { s.EncryptionKeySecret = "stolen" }), false},
		{"the pod's identity instead", s3Restore, "main", withS3(func(s *etcdv1beta2.S3BackupSource) {
			s.AWSSecret, s.CredentialsSource = "", etcdv1beta2.S3CredentialsEnvironment
		}), false},
		{"another endpoint", s3Restore, "main", withS3(func(s *etcdv1beta2.S3BackupSource) { s.Endpoint = "http://evil:9000" }), false},
		{"another cluster", s3Restore, "other", withS3(func(*etcdv1beta2.S3BackupSource) {}), false},
		{"another uid", s3Restore, "main", &render.RestoreSource{Restore: "r", UID: "u-2", S3: s3}, false},
		{"no uid", s3Restore, "main", &render.RestoreSource{Restore: "r", S3: s3}, false},
		{"another restore", s3Restore, "main", &render.RestoreSource{Restore: "q", UID: "u-1", S3: s3}, false},
		{"pvc for an S3 restore", s3Restore, "main", &render.RestoreSource{Restore: "r", UID: "u-1", PVC: pvcRestore.Spec.PVC}, false},
		{"same pvc", pvcRestore, "main", &render.RestoreSource{Restore: "r", UID: "u-1", PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "claim", Path: "/bk/main.db"}}, true},
		{"another claim", pvcRestore, "main", &render.RestoreSource{Restore: "r", UID: "u-1", PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "x", Path: "bk/main.db"}}, false},
		{"another file", pvcRestore, "main", &render.RestoreSource{Restore: "r", UID: "u-1", PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "claim", Path: "bk/other.db"}}, false},
	})
}

// annotationCase is a row of a table test of a check of a cluster's restore annotation:
// whether src, read from cluster's annotation, is er's.
type annotationCase struct {
	name    string
	er      *etcdv1beta2.EtcdRestore
	cluster string
	src     *render.RestoreSource
	ok      bool
}

// runAnnotationCases runs check on each case.
func runAnnotationCases(t *testing.T, check func(*etcdv1beta2.EtcdRestore, string, *render.RestoreSource) error, cases []annotationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := check(tc.er, tc.cluster, tc.src); (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
