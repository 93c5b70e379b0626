package restoreorigin

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// A restore that names an EtcdBackup is judged against that backup's storage; without
// the backup it is never accepted.
func TestCheckWithBackup(t *testing.T) {
	er := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u-1",
			Annotations: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "nightly"}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "main"}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	}
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: etcdv1beta2.BackupSource{
			S3: &etcdv1beta2.S3BackupSource{Path: "bk/per", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}}},
	}
	src := func(path, secret string) *render.RestoreSource {
		return &render.RestoreSource{Restore: "r", UID: "u-1", S3: &etcdv1beta2.S3BackupSource{Path: path, AWSSecret: secret, Endpoint: "http://minio:9000", ForcePathStyle: true}}
	}
	otherNS := eb.DeepCopy()
	otherNS.Namespace = "elsewhere"
	otherName := eb.DeepCopy()
	otherName.Name = "weekly"
	for _, tc := range []struct {
		name string
		eb   *etcdv1beta2.EtcdBackup
		src  *render.RestoreSource
		ok   bool
	}{
		{"one of the backup's objects", eb, src("bk/per_v20_2026-12-01-11:00:00", "aws"), true},
		{"another Secret", eb, src("bk/per_v20_2026-12-01-11:00:00", "stolen"), false},
		{"an object the backup did not name", eb, src("bk/other.db", "aws"), false},
		{"a backup of another namespace", otherNS, src("bk/per_v20_2026-12-01-11:00:00", "aws"), false},
		{"another backup", otherName, src("bk/per_v20_2026-12-01-11:00:00", "aws"), false},
		{"no backup", nil, src("bk/per_v20_2026-12-01-11:00:00", "aws"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckWithBackup(er, "main", tc.src, tc.eb)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if err := Check(er, "main", src("bk/per_v20_2026-12-01-11:00:00", "aws")); err == nil {
		t.Error("Check accepted a restore that names an EtcdBackup without seeing the backup")
	}
}
