package restoreorigin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Check, the fallback when the created-cluster record does not match the cluster as a
// whole, compares the annotation's sha256 with every pin the EtcdRestore recorded: the
// one it wrote for a cluster of this name, and the chosen object's.
func TestCheckComparesPin(t *testing.T) {
	pin, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	s3 := &etcdv1beta2.S3BackupSource{Path: "bk/main.db", AWSSecret: "aws"}
	restore := func(edit func(*etcdv1beta2.EtcdRestore)) *etcdv1beta2.EtcdRestore {
		er := &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u-1"},
			Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "main"},
				BackupStorageType: etcdv1beta2.BackupStorageTypeS3, RestoreSource: etcdv1beta2.RestoreSource{S3: s3}},
		}
		if edit != nil {
			edit(er)
		}
		return er
	}
	recorded := func(cluster, sha string) func(*etcdv1beta2.EtcdRestore) {
		return func(er *etcdv1beta2.EtcdRestore) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: "ns", UID: "c-1"}}
			ann, err := render.RestoreSource{Restore: "r", UID: "u-1", S3: s3, SHA256: sha}.Annotations()
			if err != nil {
				t.Fatal(err)
			}
			c.Annotations = ann
			rec, err := RecordOf(c)
			if err != nil {
				t.Fatal(err)
			}
			er.Annotations = map[string]string{CreatedClusterAnnotation: rec}
		}
	}
	chose := func(sha string) func(*etcdv1beta2.EtcdRestore) {
		return func(er *etcdv1beta2.EtcdRestore) {
			er.Status.Backup = &etcdv1beta2.ChosenBackup{Key: "main.db", SHA256: sha}
		}
	}
	src := func(sha string) *render.RestoreSource {
		return &render.RestoreSource{Restore: "r", UID: "u-1", S3: s3, SHA256: sha}
	}
	for _, tc := range []struct {
		name string
		er   *etcdv1beta2.EtcdRestore
		src  *render.RestoreSource
		ok   bool
	}{
		{"nothing recorded", restore(nil), src(pin), true},
		{"the recorded pin", restore(recorded("main", pin)), src(pin), true},
		{"the recorded pin in upper case", restore(recorded("main", pin)), src(strings.ToUpper(pin)), true},
		{"another pin than recorded", restore(recorded("main", pin)), src(other), false},
		{"the pin removed", restore(recorded("main", pin)), src(""), false},
		{"a pin where none was recorded", restore(recorded("main", "")), src(pin), false},
		{"recorded for another cluster name", restore(recorded("elsewhere", pin)), src(other), true},
		{"the chosen object's pin", restore(chose(pin)), src(pin), true},
		{"another pin than chosen", restore(chose(pin)), src(other), false},
		{"chosen object without a checksum", restore(chose("")), src(pin), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.er, "main", tc.src)
			if (err == nil) != tc.ok {
				t.Fatalf("Check: %v, want ok=%v", err, tc.ok)
			}
		})
	}

	// A PVC restore is never pinned by the operator.
	pvc := restore(func(er *etcdv1beta2.EtcdRestore) {
		er.Spec.BackupStorageType, er.Spec.S3 = etcdv1beta2.BackupStorageTypePVC, nil
		er.Spec.PVC = &etcdv1beta2.PVCBackupSource{ClaimName: "claim", Path: "main.db"}
	})
	for sha, ok := range map[string]bool{"": true, pin: false} {
		err := Check(pvc, "main", &render.RestoreSource{Restore: "r", UID: "u-1", PVC: pvc.Spec.PVC, SHA256: sha})
		if (err == nil) != ok {
			t.Errorf("pvc with sha256 %q: %v, want ok=%v", sha, err, ok)
		}
	}
}
