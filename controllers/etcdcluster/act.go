package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
)

// act performs one planned step. Every step is idempotent: repeating it after an operator
// restart, or after a partial failure, converges to the same state. The steps live beside
// what they change: act_bootstrap.go (the initial cluster), act_members.go (etcd
// membership), act_pods.go (member pods and claims), act_recovery.go (quorum-loss
// recovery), act_delete.go (deleting only what the cluster controls).
func (r *Reconciler) act(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) (ctrl.Result, error) {
	if a.ClearPending {
		c.Status.PendingMember = nil
	}
	var err error
	switch a.Kind {
	case planner.Wait:
		return ctrl.Result{RequeueAfter: clampRequeue(a.RequeueAfter)}, nil
	case planner.Done:
		if o.space.nearQuota(c) { // observe_space.go
			return ctrl.Result{RequeueAfter: nearQuotaResync}, nil
		}
		return ctrl.Result{RequeueAfter: steadyResync}, nil
	case planner.RefuseUpgrade, planner.QuorumLost:
		r.warnOnly(c, a)
		return ctrl.Result{RequeueAfter: steadyResync}, nil

	case planner.Bootstrap:
		err = r.bootstrap(ctx, c, o, a)
	case planner.CreatePod:
		err = r.createPod(ctx, c, o, a)
	case planner.AddLearner:
		err = r.addLearner(ctx, c, o, a)
	case planner.PromoteLearner:
		err = r.promoteLearner(ctx, c, o, a)
	case planner.MoveLeader:
		err = r.moveLeader(ctx, c, o, a)
	case planner.RemoveMember, planner.ReplaceMember:
		err = r.removeMember(ctx, c, o, a)
	case planner.DeletePod:
		err = r.deletePod(ctx, c, o, a)
	case planner.UpgradeMember:
		err = r.upgradeMember(ctx, c, a)
	case planner.FixPodImage:
		err = r.fixPodImage(ctx, c, a)
	case planner.PatchPodMetadata:
		err = r.patchPodMetadata(ctx, c, a) // act_reconfigure.go
	case planner.UpdatePeerURL:
		err = r.updatePeerURL(ctx, c, o, a) // act_tlsenable.go
	case planner.ForceNewCluster:
		err = r.startRecovery(ctx, c, o, a)
	case planner.FinishRecovery:
		err = r.finishRecovery(ctx, c, o, a)
	case planner.AbortRecovery:
		err = r.abortRecovery(ctx, c, o, a)
	case planner.Defragment, planner.Compact, planner.DisarmAlarm, planner.FinishMaintenance:
		err = r.actMaintenance(ctx, c, o, a) // act_maintenance.go
	case planner.RestoreFromBackup: // act_totalloss.go
		err = r.startBackupRestore(ctx, c, o, a)
	case planner.FinishBackupRestore:
		err = r.finishBackupRestore(ctx, c, o, a)
	case planner.AbortBackupRestore:
		err = r.abortBackupRestore(ctx, c, o, a)
	case planner.TakeUpgradeBackup:
		err = r.takeUpgradeBackup(ctx, c, o, a) // act_upgradebackup.go
	case planner.EnableDowngrade, planner.CancelDowngrade:
		err = r.actDowngrade(ctx, c, o, a) // act_downgrade.go
	default:
		err = fmt.Errorf("unknown action %v", a.Kind)
	}
	if p, ok := errors.AsType[*backupCheckPending](err); ok {
		return ctrl.Result{RequeueAfter: p.after}, nil // a backup is checked in a pod
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: activeResync}, nil
}

// etcdWait is a step etcd refused for a condition that clears on its own within
// seconds: a member add while etcd does not yet count every member as connected for 5 s
// (ErrUnhealthyCluster, e.g. right after the previous member started), a voter's removal
// refused for the same reason (right after a promotion), a promotion of a learner still
// catching up (ErrLearnerNotReady). The step asks etcdadmin not to retry
// those inside the call, which would hold one of the reconciler's few workers for up to
// its budget; the reconcile requeues after etcdWaitRequeue instead, quietly, until the
// step has waited etcdWaitLimit (memory_backoff.go), after which it fails like any other.
type etcdWait struct{ err error }

func (w *etcdWait) Error() string { return w.err.Error() }
func (w *etcdWait) Unwrap() error { return w.err }

const etcdWaitRequeue = time.Second

// asEtcdWait wraps err as an etcdWait if etcd refused for one of kinds.
func asEtcdWait(err error, kinds ...error) error {
	for _, k := range kinds {
		if errors.Is(err, k) {
			return &etcdWait{err: err}
		}
	}
	return err
}

// warnOnly executes RefuseUpgrade and QuorumLost: they are reported through conditions
// and a warning event; nothing is touched.
func (r *Reconciler) warnOnly(c *etcdv1beta2.EtcdCluster, a planner.Action) {
	r.Recorder.Event(c, corev1.EventTypeWarning, a.Reason, a.Message)
}

// adminFor is the observation's etcd client, for a step that must talk to etcd.
func (o *observation) adminFor(k planner.Kind) (*etcdadmin.Admin, error) {
	if o.admin == nil {
		return nil, fmt.Errorf("no reachable etcd endpoint for %s", k)
	}
	return o.admin, nil
}

// clampRequeue keeps a planner's wait hint within what the watch-driven loop needs.
func clampRequeue(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return activeResync
	case d > steadyResync:
		return steadyResync
	}
	return d
}

func idString(id uint64) string {
	if id == 0 {
		return ""
	}
	return etcdadmin.FormatID(id)
}
