package restoreorigin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

var (
	shaA = strings.Repeat("ab", 32)
	shaC = strings.Repeat("cd", 32)
	shaF = strings.Repeat("ff", 32)
)

// restoredCluster is cluster name/uid of namespace ns with src as its restore annotation.
func restoredCluster(t *testing.T, ns, name, uid string, src render.RestoreSource) *etcdv1beta2.EtcdCluster {
	t.Helper()
	ann, err := src.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid), Annotations: ann}}
}

// A cluster the restore recorded creating stays its own whatever the EtcdBackup says
// now; a cluster with another UID, another name or namespace, or an annotation changed
// since (another Secret, object or endpoint) is not, nor is a record of another restore.
func TestCheckCreated(t *testing.T) {
	written := render.RestoreSource{Restore: "r", UID: "u-1", SHA256: shaA,
		S3: &etcdv1beta2.S3BackupSource{Path: "bk/per_v20_2026-12-01-11:00:00", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}}
	genuine := restoredCluster(t, "ns", "main", "c-1", written)
	rec, err := RecordOf(genuine)
	if err != nil {
		t.Fatal(err)
	}
	er := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u-1", Annotations: map[string]string{
			etcdv1beta2.RestoreBackupRefAnnotation: "nightly", CreatedClusterAnnotation: rec}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "main"}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	}
	edited := func(edit func(*render.RestoreSource)) render.RestoreSource {
		src := written
		s3 := *written.S3
		src.S3 = &s3
		edit(&src)
		return src
	}
	otherUID := er.DeepCopy()
	otherUID.UID = "u-2"
	noRecord := er.DeepCopy()
	delete(noRecord.Annotations, CreatedClusterAnnotation)
	badRecord := er.DeepCopy()
	badRecord.Annotations[CreatedClusterAnnotation] = "{"
	for _, tc := range []struct {
		name string
		er   *etcdv1beta2.EtcdRestore
		c    *etcdv1beta2.EtcdCluster
		ok   bool
	}{
		{"the recorded cluster", er, genuine, true},
		{"a new cluster with the same annotation", er, restoredCluster(t, "ns", "main", "c-2", written), false},
		{"a cluster without uid", er, restoredCluster(t, "ns", "main", "", written), false},
		{"another namespace", er, restoredCluster(t, "other", "main", "c-1", written), false},
		{"another name", er, restoredCluster(t, "ns", "second", "c-1", written), false},
		{"another Secret since", er, restoredCluster(t, "ns", "main", "c-1", edited(func(s *render.RestoreSource) { s.S3.AWSSecret = "admin" })), false},
		{"another endpoint since", er, restoredCluster(t, "ns", "main", "c-1", edited(func(s *render.RestoreSource) { s.S3.Endpoint = "http://evil:9000" })), false},
		{"another object since", er, restoredCluster(t, "ns", "main", "c-1", edited(func(s *render.RestoreSource) { s.S3.Path = "bk/other.db" })), false},
		{"another checksum since", er, restoredCluster(t, "ns", "main", "c-1", edited(func(s *render.RestoreSource) { s.SHA256 = shaF })), false},
		{"a restore of the same name with another uid", otherUID, genuine, false},
		{"no record", noRecord, genuine, false},
		{"a malformed record", badRecord, genuine, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCreated(tc.er, tc.c)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if got := RecordedUID(er); got != "c-1" {
		t.Errorf("RecordedUID %q, want c-1", got)
	}
	if got := RecordedUID(badRecord); got != "" {
		t.Errorf("RecordedUID of a malformed record %q", got)
	}
	if _, err := RecordOf(restoredCluster(t, "ns", "main", "", written)); err == nil {
		t.Error("RecordOf recorded a cluster without uid")
	}
}

// An annotation pinned to the object the restore recorded choosing (its key and
// SHA-256) and naming the restore is the restore's; any other object, checksum, restore
// or cluster is not, nor is anything before a choice was recorded.
func TestCheckChosen(t *testing.T) {
	er := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u-1", Annotations: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "nightly"}},
		Spec:       etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "main"}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
		Status:     etcdv1beta2.EtcdRestoreStatus{Backup: &etcdv1beta2.ChosenBackup{Key: "per_v20_2026-12-01-11:00:00", Revision: 20, SHA256: shaA}},
	}
	unchecksummed := er.DeepCopy()
	unchecksummed.Status.Backup.SHA256 = ""
	unchosen := er.DeepCopy()
	unchosen.Status.Backup = nil
	src := func(restore, uid, path, sha string) *render.RestoreSource {
		// The Secret and endpoint are what the EtcdBackup said then; they may differ now.
		return &render.RestoreSource{Restore: restore, UID: uid, SHA256: sha, S3: &etcdv1beta2.S3BackupSource{Path: path, AWSSecret: "rotated-away"}}
	}
	runAnnotationCases(t, CheckChosen, []annotationCase{
		{"the chosen object", er, "main", src("r", "u-1", "bk/per_v20_2026-12-01-11:00:00", shaA), true},
		{"the chosen object, stored without a checksum", unchecksummed, "main", src("r", "u-1", "bk/per_v20_2026-12-01-11:00:00", shaC), true},
		{"another object", er, "main", src("r", "u-1", "bk/per_v30_2026-12-01-12:00:00", shaA), false},
		{"another checksum", er, "main", src("r", "u-1", "bk/per_v20_2026-12-01-11:00:00", shaF), false},
		{"no checksum", er, "main", src("r", "u-1", "bk/per_v20_2026-12-01-11:00:00", ""), false},
		{"another restore", er, "main", src("q", "u-1", "bk/per_v20_2026-12-01-11:00:00", shaA), false},
		{"another uid", er, "main", src("r", "u-2", "bk/per_v20_2026-12-01-11:00:00", shaA), false},
		{"no uid", er, "main", src("r", "", "bk/per_v20_2026-12-01-11:00:00", shaA), false},
		{"another cluster", er, "other", src("r", "u-1", "bk/per_v20_2026-12-01-11:00:00", shaA), false},
		{"nothing chosen yet", unchosen, "main", src("r", "u-1", "bk/per_v20_2026-12-01-11:00:00", shaA), false},
		{"a pvc", er, "main", &render.RestoreSource{Restore: "r", UID: "u-1", PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "c", Path: "per_v20_2026-12-01-11:00:00"}}, false},
	})
}
