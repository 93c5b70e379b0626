package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
)

// ReasonRestorePinNotTrusted is the Warning event on an EtcdCluster whose restore
// carried a signed pin the operator could not verify: its members run the snapshot
// checks again (slower, never less safe), and the restore goes on.
const ReasonRestorePinNotTrusted = "RestorePinNotTrusted"

// A member's restore step may skip the snapshot checks (etcd's integrity hash, bbolt's
// consistency, every key read) only where the operator's own EtcdBackup verification
// already ran them on exactly the bytes the step will download. The pin reaches the
// step through records a tenant can edit, so the operator trusts nothing but its own
// signature (internal/pinsign), recomputed here over what it reads itself and what it
// is about to render: the EtcdBackup by name with its current UID, the bucket, endpoint
// and key the step reads, and the SHA-256 the step checks the bytes against.

// restorePinProven says whether the restore annotation's pin is vouched for by the
// operator: the annotation names er, an EtcdRestore of an EtcdBackup (already proven the
// cluster's own by checkRestoreOrigin, which read er), and the signature it carries
// verifies for that EtcdBackup and exactly the object rendered.
func (r *Reconciler) restorePinProven(ctx context.Context, c *etcdv1beta2.EtcdCluster, er *etcdv1beta2.EtcdRestore, src *render.RestoreSource) bool {
	if src.PinSignature == "" {
		return false // nothing was claimed
	}
	name := restoreorigin.BackupRef(er)
	if name == "" {
		return r.pinNotTrusted(c, fmt.Errorf("EtcdRestore %s names no EtcdBackup whose verification could vouch for it", er.Name))
	}
	// Read from the API server now: a backup deleted and recreated under the same name
	// has another UID, and its predecessor's signatures do not verify.
	var eb etcdv1beta2.EtcdBackup
	if err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &eb); err != nil {
		if apierrors.IsNotFound(err) {
			err = fmt.Errorf("EtcdBackup %s/%s not found", c.Namespace, name)
		}
		return r.pinNotTrusted(c, err)
	}
	if err := r.pinVouched(c, &eb, src.S3, src.SHA256, src.PinRevision, src.PinSignature); err != nil {
		return r.pinNotTrusted(c, err)
	}
	return true
}

// backupRestorePinProven is restorePinProven for a recorded total-loss restore from eb
// (already read from the API server and proven the cluster's own by
// checkBackupRestoreRecord): eb's own signed record of its last verification must be of
// exactly the object and bytes restored.
func (r *Reconciler) backupRestorePinProven(c *etcdv1beta2.EtcdCluster, eb *etcdv1beta2.EtcdBackup, src *render.RestoreSource) bool {
	st := eb.Status
	if st.LastVerifiedPinSignature == "" || src.S3 == nil {
		return false
	}
	if _, key, err := backup.SplitS3Path(src.S3.Path); err != nil || key != st.LastVerifiedKey {
		return false // the record is of another object: it claims nothing about this one
	}
	if err := r.pinVouched(c, eb, src.S3, src.SHA256, st.LastVerifiedRevision, st.LastVerifiedPinSignature); err != nil {
		return r.pinNotTrusted(c, err)
	}
	return true
}

// pinVouched checks sig against the facts of the object s3 names with SHA-256 sha in eb,
// an EtcdBackup of the cluster's namespace as just read from the API server.
func (r *Reconciler) pinVouched(c *etcdv1beta2.EtcdCluster, eb *etcdv1beta2.EtcdBackup, s3 *etcdv1beta2.S3BackupSource, sha string, revision int64, sig string) error {
	if len(r.PinKey) == 0 {
		return fmt.Errorf("the operator has no restore pin key (see its log at start-up)")
	}
	if s3 == nil || sha == "" {
		return fmt.Errorf("the restore is not pinned to an S3 object's SHA-256")
	}
	bucket, key, err := backup.SplitS3Path(s3.Path)
	if err != nil {
		return err
	}
	f := pinsign.Facts{Namespace: c.Namespace, Backup: eb.Name, BackupUID: string(eb.UID), Bucket: bucket, Endpoint: s3.Endpoint,
		Key: key, SHA256: sha, Revision: revision}
	if !pinsign.Verify(r.PinKey, f, sig) {
		return fmt.Errorf("its signature does not verify for EtcdBackup %s (uid %s), s3://%s/%s, sha256 %s, revision %d", eb.Name, eb.UID, bucket, key, sha, revision)
	}
	return nil
}

// pinNotTrusted reports a pin that is not trusted: the checks run. Never an error.
func (r *Reconciler) pinNotTrusted(c *etcdv1beta2.EtcdCluster, why error) bool {
	r.Recorder.Event(c, corev1.EventTypeWarning, ReasonRestorePinNotTrusted,
		fmt.Sprintf("the restore's pin is not proven to be one the operator verified, so the members run the snapshot checks again: %v", why))
	return false
}
