package etcdbackup

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
)

// holdings is status.backups: the newest objects this backup holds in S3, read after a
// backup and its retention, with the same listing retention uses (only objects named
// from this backup's key, minus those another EtcdBackup wrote). If the store cannot be
// listed, the previous list stays: it is refreshed after the next backup. PVC backups
// are not listed (the operator cannot read the claim).
func (r *Reconciler) holdings(ctx context.Context, eb *etcdv1beta2.EtcdBackup) []etcdv1beta2.StoredBackup {
	if eb.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 {
		return eb.Status.Backups
	}
	store, key, err := r.s3Store(ctx, eb)
	if err == nil {
		var entries []backupselect.Entry
		entries, err = backupselect.Newest(ctx, backupselect.Source{Store: store, Key: key, Namespace: eb.Namespace, Name: eb.Name}, etcdv1beta2.MaxStatusBackups)
		if err == nil {
			return storedBackups(entries, eb.Status.Backups)
		}
	}
	log.FromContext(ctx).Info("could not list the stored backups for status.backups; keeping the previous list", "error", err.Error())
	return eb.Status.Backups
}

// storedBackups turns entries into status.backups, keeping what earlier status knew of
// the same objects (whether they verified).
func storedBackups(entries []backupselect.Entry, prev []etcdv1beta2.StoredBackup) []etcdv1beta2.StoredBackup {
	verified := map[string]bool{}
	for _, b := range prev {
		if b.Verified {
			verified[b.Key+"@"+b.SHA256] = true
		}
	}
	out := make([]etcdv1beta2.StoredBackup, 0, len(entries))
	for _, e := range entries {
		out = append(out, etcdv1beta2.StoredBackup{
			Key: e.Key, Revision: e.Revision, Time: metav1.NewTime(e.Time), Size: e.Size, SHA256: e.SHA256,
			Verified: verified[e.Key+"@"+e.SHA256],
		})
	}
	return out
}

// markVerified flags the status.backups entry of the object that passed verification:
// the same key at the same revision (a one-shot backup rewrites its key, so the key
// alone could name a later object that never verified).
func markVerified(backups []etcdv1beta2.StoredBackup, key string, revision int64) {
	for i := range backups {
		if backups[i].Key == key && backups[i].Revision == revision {
			backups[i].Verified = true
		}
	}
}
