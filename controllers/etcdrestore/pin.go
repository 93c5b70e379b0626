package etcdrestore

import (
	"strings"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// carryPinSignature copies the EtcdBackup's signed record of its last passed
// verification into the restore source when that record is of exactly the object and
// bytes the restore chose (same key, same SHA-256). It is carried, not judged: this
// controller holds no key, and everything it reads here is the tenant's to edit. The
// cluster controller checks the signature against what it reads itself before it lets
// the members skip the snapshot checks; a record that does not match, or none, leaves
// the source without one and the checks run.
func carryPinSignature(src *render.RestoreSource, eb *etcdv1beta2.EtcdBackup) {
	st := eb.Status
	if src.S3 == nil || src.SHA256 == "" || st.LastVerifiedPinSignature == "" {
		return
	}
	if _, key, err := backup.SplitS3Path(src.S3.Path); err != nil || key != st.LastVerifiedKey || !strings.EqualFold(st.LastVerifiedSHA256, src.SHA256) {
		return
	}
	src.PinSignature, src.PinRevision = st.LastVerifiedPinSignature, st.LastVerifiedRevision
}
