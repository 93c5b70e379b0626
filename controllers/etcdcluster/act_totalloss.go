package etcdcluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// ClusterConditionRestoredFromBackup says the cluster's data came from a backup after
// total loss: which object, its revision, and that later writes are gone.
const ClusterConditionRestoredFromBackup etcdv1beta2.ClusterConditionType = "RestoredFromBackup"

// startBackupRestore executes RestoreFromBackup: pick the newest backup that passes the
// checks the restore step makes, record it (once, before anything is created), then
// create the one member that restores it and bootstraps a cluster under a token of its
// own. Nothing else is touched: there is nothing else left.
func (r *Reconciler) startBackupRestore(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	rec := c.Status.BackupRestore
	if why := r.markerKeyMissing(); why != "" {
		return r.refuseUnsignable(c, !rec.InProgress(), "restore from backup", why)
	}
	if !rec.InProgress() {
		chosen, err := r.chooseBackup(ctx, c)
		if err != nil {
			return err
		}
		now := r.Now()
		chosen.Member = a.Name
		chosen.Token = render.ClusterToken(c) + "-b" + strconv.FormatInt(now.Unix(), 36)
		chosen.StartedAt = metav1.NewTime(now)
		// Recorded before the pod exists: a restarted operator continues this very
		// restore (same object, member and token) instead of starting another.
		c.Status.BackupRestore = chosen
		c.Status.PendingMember = nil
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
		rec = chosen
		r.Recorder.Eventf(c, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoringFromBackup,
			"every member's data is lost; restoring s3://%s (EtcdBackup %s, revision %d) into member %s: writes after revision %d are gone",
			rec.Path, rec.Backup, rec.Revision, rec.Member, rec.Revision)
	}
	m := render.Member{
		Name: rec.Member, Version: a.Version, InitialClusterState: render.StateNew,
		InitialCluster: render.InitialCluster(c, []string{rec.Member}, r.ClusterDomain), Token: rec.Token,
	}
	if err := r.createMembers(ctx, c, []render.Member{m}); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonMemberPodCreated,
		"created pod %s, which restores s3://%s (revision %d)", rec.Member, rec.Path, rec.Revision)
	return nil
}

// finishBackupRestore executes FinishBackupRestore: the restored member serves, so the
// record is marked finished (and kept: it says where the data came from) and the
// member's marker goes. Scale-up regrows the cluster from here.
func (r *Reconciler) finishBackupRestore(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	rec := c.Status.BackupRestore
	if !rec.InProgress() {
		return nil
	}
	if err := r.unmarkRecovery(ctx, c, rec.Member); err != nil {
		return err
	}
	now := metav1.NewTime(r.Now())
	rec.FinishedAt = &now
	msg := fmt.Sprintf("restored from s3://%s (EtcdBackup %s, revision %d) after every member's data was lost; writes after revision %d are gone",
		rec.Path, rec.Backup, rec.Revision, rec.Revision)
	// No event from the condition: the warning below says more.
	r.setCondition(c, conditionUpdate{Type: ClusterConditionRestoredFromBackup, Status: true, Reason: etcdv1beta2.ReasonRestoredFromBackup, Message: msg},
		now.UTC().Format(timeFormat))
	if err := o.status.checkpoint(ctx); err != nil {
		return err
	}
	r.Recorder.Eventf(c, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoredFromBackup, "%s; growing back to %d members", msg, c.Spec.Size)
	return nil
}

// abortBackupRestore executes AbortBackupRestore: the record is forgotten, with a
// warning; the member's pod goes only when the plan says it is that restore's (it carries
// the restore's marker), and it holds nothing but a copy of the backup.
func (r *Reconciler) abortBackupRestore(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	if rec := c.Status.BackupRestore; rec.InProgress() {
		if a.DeletePod && a.Name == rec.Member {
			if err := r.deleteMember(ctx, c, o, a.Name); err != nil {
				return err
			}
		}
		c.Status.BackupRestore = nil
		if err := o.status.checkpoint(ctx); err != nil {
			return err
		}
	}
	r.Recorder.Event(c, corev1.EventTypeWarning, a.Reason, a.Message)
	return nil
}
