package etcdbackup

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
)

// storedRun is an object of this backup found in the store for the run that is due.
type storedRun struct {
	backupselect.Entry
	location string
}

// result is the run's outcome as status records it. What only the upload knew (the
// member it streamed from, etcd's version) is not in the object and stays unset.
func (s storedRun) result() backup.JobResult {
	return backup.JobResult{Key: s.Key, Location: s.location, Size: s.Size, SHA256: s.SHA256, Revision: s.Revision}
}

// runAlreadyStored finds a periodic S3 backup's object for the run that is due now,
// stored by an operator that stopped (killed, or lost its leadership) between the
// upload and the status write: the store, not status, says whether the run happened,
// so a second operator records that object instead of uploading the same run again.
// Only a complete object (its checksum written) of this EtcdBackup that status does not
// list yet counts.
func (r *Reconciler) runAlreadyStored(ctx context.Context, eb *etcdv1beta2.EtcdBackup, now time.Time) (storedRun, bool) {
	if eb.Spec.StorageType != etcdv1beta2.BackupStorageTypeS3 || !periodic(eb) || manualRunDue(eb) {
		return storedRun{}, false
	}
	dueAt, ok := runDueAt(eb, now)
	if !ok {
		return storedRun{}, false
	}
	store, key, err := r.s3Store(ctx, eb)
	if err != nil {
		return storedRun{}, false // takeBackup reports the same error
	}
	newest, err := backupselect.Newest(ctx, backupselect.Source{Store: store, Key: key, Namespace: eb.Namespace, Name: eb.Name}, 1)
	if err != nil || len(newest) == 0 {
		return storedRun{}, false
	}
	e := newest[0]
	if recorded(eb, e.Key) || !storedForRun(e.Time, dueAt, eb.Status.LastSuccessDate.Time, now) {
		return storedRun{}, false
	}
	log.FromContext(ctx).Info("the due run was already stored; recording it instead of uploading again", "key", e.Key, "revision", e.Revision)
	return storedRun{Entry: e, location: store.String() + "/" + e.Key}, true
}

// runDueAt is when the run that is due now became due: the schedule's slot, or the
// last success plus the interval (the backup's creation for its first run).
func runDueAt(eb *etcdv1beta2.EtcdBackup, now time.Time) (time.Time, bool) {
	if s, _ := cronScheduleOf(eb); s != nil {
		due, run, _ := s.Due(lastScheduleTime(eb), eb.CreationTimestamp.Time, now)
		return run, due
	}
	interval := policyOf(eb).Interval()
	if interval == 0 {
		return time.Time{}, false
	}
	if eb.Status.LastSuccessDate.IsZero() {
		return eb.CreationTimestamp.Time, true
	}
	return eb.Status.LastSuccessDate.Add(interval), true
}

// storedForRun: an object taken at taken belongs to the run due at dueAt. Periodic
// object names carry whole seconds, so the comparisons are to the second; an object no
// newer than the last recorded success is that success's, never this run's.
func storedForRun(taken, dueAt, lastSuccess, now time.Time) bool {
	taken, dueAt = taken.Truncate(time.Second), dueAt.Truncate(time.Second)
	if taken.Before(dueAt) || taken.After(now) {
		return false
	}
	return lastSuccess.IsZero() || taken.After(lastSuccess.Truncate(time.Second))
}

// recorded: status already lists the object (a recorded run's, however close in time
// its name is to the run due now).
func recorded(eb *etcdv1beta2.EtcdBackup, key string) bool {
	for _, b := range eb.Status.Backups {
		if b.Key == key {
			return true
		}
	}
	return false
}
