package etcdrestore

import (
	"strings"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The EtcdBackup's signed verification record is carried into the restore source only
// for exactly the object and bytes the restore chose.
func TestCarryPinSignature(t *testing.T) {
	sha, sig := strings.Repeat("ab", 32), strings.Repeat("5e", 32)
	eb := &etcdv1beta2.EtcdBackup{Status: etcdv1beta2.EtcdBackupStatus{LastVerifiedKey: "c/db_v7_x", LastVerifiedRevision: 7,
		LastVerifiedSHA256: sha, LastVerifiedPinSignature: sig}}
	for _, tc := range []struct {
		name, path, sha string
		edit            func(*etcdv1beta2.EtcdBackup)
		want            bool
	}{
		{name: "the verified object", path: "bk/c/db_v7_x", sha: sha, want: true},
		{name: "the verified object, pin in upper case", path: "bk/c/db_v7_x", sha: strings.ToUpper(sha), want: true},
		{name: "a newer object", path: "bk/c/db_v8_y", sha: sha},
		{name: "other bytes", path: "bk/c/db_v7_x", sha: strings.Repeat("cd", 32)},
		{name: "no pin", path: "bk/c/db_v7_x"},
		{name: "nothing signed", path: "bk/c/db_v7_x", sha: sha, edit: func(b *etcdv1beta2.EtcdBackup) { b.Status.LastVerifiedPinSignature = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := eb.DeepCopy()
			if tc.edit != nil {
				tc.edit(b)
			}
			src := render.RestoreSource{S3: &etcdv1beta2.S3BackupSource{Path: tc.path}, SHA256: tc.sha}
			carryPinSignature(&src, b)
			if got := src.PinSignature != ""; got != tc.want {
				t.Fatalf("carried %q, want carried=%v", src.PinSignature, tc.want)
			}
			if tc.want && (src.PinSignature != sig || src.PinRevision != 7) {
				t.Errorf("carried %q revision %d", src.PinSignature, src.PinRevision)
			}
		})
	}
}
