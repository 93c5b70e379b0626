package etcdbackup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

// scope is one backup reconcile: the EtcdBackup as read and the status it ends with.
// The phases change eb's status and queue events; Reconcile writes it once, deferred
// (updateStatus), and announces the events only once the write went through.
type scope struct {
	eb   *etcdv1beta2.EtcdBackup // the status being written
	orig *etcdv1beta2.EtcdBackup // as read, what the patch is computed against
	// write: a phase changed status (or recorded a stored backup, always written).
	write bool
	// recordsStored: the write records a stored backup; its failure is an error even when
	// the EtcdBackup is gone (other writes ignore a deleted EtcdBackup).
	recordsStored bool
	events        []pendingEvent
}

type pendingEvent struct{ typ, reason, msg string }

func newScope(eb *etcdv1beta2.EtcdBackup) *scope {
	return &scope{eb: eb, orig: eb.DeepCopy()}
}

// updateStatus writes what the reconcile's phases changed, in one patch, then records
// their events. Nothing is written when nothing changed.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope) error {
	if !s.write {
		return nil
	}
	if err := r.Status().Patch(ctx, s.eb, client.MergeFrom(s.orig)); err != nil {
		if s.recordsStored {
			return err
		}
		return client.IgnoreNotFound(err)
	}
	for _, e := range s.events {
		r.Recorder.Event(s.eb, e.typ, e.reason, e.msg)
	}
	s.orig, s.write, s.recordsStored, s.events = s.eb.DeepCopy(), false, false, nil
	return nil
}

// succeed records a stored backup in status and an event.
func (r *Reconciler) succeed(ctx context.Context, s *scope, now time.Time, res backup.JobResult, took time.Duration) (ctrl.Result, error) {
	eb := s.eb
	r.forget(client.ObjectKeyFromObject(eb))
	recordBackup(eb.Namespace, eb.Name, etcdv1beta2.ReasonBackupSucceeded, took, now, res.Size)
	if manualRunDue(eb) {
		r.noteBackupNow(client.ObjectKeyFromObject(eb), r.Now())
	}
	eb.Status.Succeeded = true
	eb.Status.Reason = ""
	clearSkipped(eb) // hibernated.go
	if res.Version != "" || res.Revision != 0 {
		eb.Status.EtcdVersion = res.Version
		eb.Status.EtcdRevision = res.Revision
	}
	eb.Status.LastSuccessDate = metav1.NewTime(now)
	eb.Status.Backups = r.holdings(ctx, eb)
	next := recordScheduledRun(eb, now)
	msg := fmt.Sprintf("snapshot of revision %d from %s stored as %s (%d bytes, sha256 %s)", res.Revision, res.Endpoint, res.Location, res.Size, res.SHA256)
	if res.Location == "" {
		msg = "backup pod succeeded but reported no result (no termination message)"
	}
	if res.Pruned > 0 {
		msg += fmt.Sprintf("; retention removed %d older backups", res.Pruned)
	}
	if res.RetentionError != "" {
		msg += "; retention failed: " + res.RetentionError
	}
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded,
		Message: msg, ObservedGeneration: eb.Generation,
	})
	s.write, s.recordsStored = true, true
	s.events = append(s.events, pendingEvent{corev1.EventTypeNormal, etcdv1beta2.ReasonBackupSucceeded, msg})
	if !next.IsZero() {
		return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
	}
	return ctrl.Result{}, nil
}

// fail records a failed attempt in the CoreOS fields and the condition. Earlier successes
// (lastSuccessDate, revision) stay as they were. The same failure again writes nothing
// and records no event.
func (r *Reconciler) fail(s *scope, reason, msg string) {
	eb := s.eb
	before := eb.Status.DeepCopy()
	if manualRunDue(eb) {
		r.noteBackupNow(client.ObjectKeyFromObject(eb), r.Now())
	}
	eb.Status.Succeeded = false
	eb.Status.Reason = msg
	skipped := clearSkipped(eb) // hibernated.go
	// A backup-now request is answered by this attempt, failed or not: the next value
	// asks again.
	eb.Status.LastBackupNow = eb.Annotations[etcdv1beta2.BackupNowAnnotation]
	changed := meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason,
		Message: msg, ObservedGeneration: eb.Generation,
	})
	if !changed && !skipped && before.Reason == msg && !before.Succeeded && before.LastBackupNow == eb.Status.LastBackupNow {
		return
	}
	s.write = true
	s.events = append(s.events, pendingEvent{corev1.EventTypeWarning, reason, msg})
}
