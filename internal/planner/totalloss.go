package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Recovery from total loss: every member's data is gone, so there is no survivor to copy
// from (the quorum rule's ForceNewCluster needs one), and only a backup can bring the data back.
//
// Total loss is proven only by what cannot hide data: the cluster formed once
// (Bootstrapped), no endpoint answers, no member pod exists in any state (running,
// pending, terminating), no member data claim exists, and all of this has held for
// QuorumLossGrace. A pod or a claim means a member's data may survive, and then nothing is
// restored over it: pods come back on their claims (the recreate rule), or the loss is reported.
// With the opt-in (Desired.RestoreFromBackup) and a backup found by the controller
// (Observed.Backup) the cluster is restored in place: one member, under the cluster's
// name and Services, bootstraps from the backup under a token of its own; the cluster
// then regrows to its size by scale-up, the members syncing from it. One member first,
// not all at once: a single download and restore, one pod to watch and to abandon, and
// the regrowth is the ordinary, tested scale-up path.

// BackupCandidate is the backup a total-loss restore would use, as the controller found
// it: the newest object written by an EtcdBackup of the cluster's namespace that
// targets the cluster.
type BackupCandidate struct {
	// Backup is the EtcdBackup's name.
	Backup string
	// Path is the object, "<bucket>/<key>".
	Path string
	// Revision is the etcd revision the object holds (from its name; 0 if unknown).
	Revision int64
}

// BackupRestore is a restore from backup in progress, as the controller recorded it.
type BackupRestore struct {
	Backup   string
	Path     string
	Revision int64
	// Member is the restored cluster's first member and its pod.
	Member    string
	StartedAt time.Time
	// Token is the restored cluster's token; the member's pod carries it as its
	// RecoveryToken, which is what proves the record is the controller's.
	Token string
	// StepStarted: the member's pod has run its restore step (the init container that
	// downloads and restores the backup) at least once, or runs it now.
	StepStarted bool
	// StepDoneAt is when that restore step finished successfully (zero: it has not).
	StepDoneAt time.Time
}

// DefaultBackupRestoreTimeout bounds a total-loss restore while its restore step runs:
// the step downloads the whole backup, and a multi-GiB object on a slow link takes far
// longer than RecoveryTimeout, which would abandon and download it again forever. A
// member whose step never started, and the time after the step finished (etcd starting
// on restored data), are still bounded by the shorter RecoveryTimeout.
const DefaultBackupRestoreTimeout = time.Hour

// planTotalLoss is the no-members rule when no member pod exists at all.
//   - a member claim exists → QuorumLost: its data may survive; it is never restored over.
//   - no opt-in → QuorumLost, naming the backup that could be restored and the opt-in.
//   - no backup → QuorumLost: nothing to restore from.
//   - within QuorumLossGrace of the loss → Wait: pods being recreated by someone else
//     (a restore of the namespace, a GitOps sync) must not race a restore.
//   - otherwise RestoreFromBackup into a new member name.
func planTotalLoss(d Desired, o Observed) Action {
	const lost = "the cluster was formed but no member answers and no member pod exists"
	if !o.Bootstrapped {
		// The bootstrap rule bootstraps a cluster that never formed; never a restore into it.
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonAllMembersLost, Message: lost}
	}
	if len(o.Claims) > 0 {
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonAllMembersLost, RequeueAfter: requeueLong,
			Message: fmt.Sprintf("%s, but member claims exist (%v): their data may survive, so nothing is restored over it", lost, o.Claims)}
	}
	b, passed := o.Backup, backupProblemsNote(o)
	switch {
	case !d.RestoreFromBackup && b != nil:
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonAllMembersLost, RequeueAfter: requeueLong,
			Message: fmt.Sprintf("%s; backup s3://%s (EtcdBackup %s, revision %d) is available: annotate the cluster %s=\"true\" to restore it in place (writes after that revision are lost)%s",
				lost, b.Path, b.Backup, b.Revision, v1beta2.AnnotationAllowRestoreFromBackup, passed)}
	case !d.RestoreFromBackup:
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonAllMembersLost, RequeueAfter: requeueLong,
			Message: lost + "; restore from a backup (an EtcdRestore, or an EtcdBackup of this cluster and the annotation " + v1beta2.AnnotationAllowRestoreFromBackup + ")" + passed}
	case b == nil:
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonAllMembersLost, RequeueAfter: requeueLong,
			Message: lost + "; restore from backup is allowed but no EtcdBackup of this namespace targeting this cluster has a usable backup" + passed}
	}
	since := o.AllLostSince
	if since.IsZero() || since.After(o.Now) {
		since = o.Now
	}
	if el := o.Now.Sub(since); el < d.QuorumLossGrace {
		return wait(v1beta2.ReasonAllMembersLost, fmt.Sprintf("%s; restoring s3://%s (revision %d) unless a member returns within %s%s",
			lost, b.Path, b.Revision, d.QuorumLossGrace, passed), remaining(d.QuorumLossGrace, el))
	}
	ver, err := ParseVersion(d.Version)
	if err != nil {
		return wait(v1beta2.ReasonInvalidSpec, fmt.Sprintf("version %q: %v; nothing is restored", d.Version, err), requeueWait)
	}
	avoid := map[string]bool{}
	for _, n := range append(append([]string(nil), o.KnownMembers...), o.RetiredNames...) {
		avoid[n] = true
	}
	name := NewMemberNames(d.ClusterName, o.nameSeed(), 1, avoid)[0]
	return Action{Kind: RestoreFromBackup, Name: name, Version: ver.String(), Revision: b.Revision, Reason: v1beta2.ReasonRestoringFromBackup,
		Message: fmt.Sprintf("%s for over %s; restoring the newest restorable backup of EtcdBackup %s (newest: s3://%s, revision %d) into member %s%s",
			lost, d.QuorumLossGrace, b.Backup, b.Path, b.Revision, name, passed)}
}

// backupProblemsNote says, for a total-loss message, why EtcdBackups or objects were
// passed over ("" when none was): the tenant sees why no backup, or an older one, is used.
func backupProblemsNote(o Observed) string {
	if len(o.BackupProblems) == 0 {
		return ""
	}
	return "; passed over: " + strings.Join(o.BackupProblems, "; ")
}

// planBackupRestore is the backup-restore rule: a recorded restore from backup is finished before
// anything else.
//   - the restored member answers, alone, as its own leader, at the backup's revision or
//     later → FinishBackupRestore; scale-up then regrows the cluster.
//   - the record is not one the controller is carrying out → AbortBackupRestore,
//     nothing deleted.
//   - the opt-in was withdrawn, the member's pod is gone, or its time is up (see
//     backupRestoreOverdue: DefaultBackupRestoreTimeout while the restore step runs,
//     RecoveryTimeout otherwise) → AbortBackupRestore, deleting only that member's pod
//     (it holds nothing but the backup's copy); the no-members rule may then start another attempt.
//   - no pod yet → RestoreFromBackup again with the recorded member.
//   - otherwise Wait (a failing restore step is reported by PodsHealthy meanwhile).
func planBackupRestore(d Desired, o Observed) Action {
	r := o.BackupRestore
	var pod *Pod
	for i := range o.Pods {
		if o.Pods[i].Name == r.Member {
			pod = &o.Pods[i]
		}
	}
	if why := backupRestoreRecordInvalid(d, o, pod); why != "" {
		return Action{Kind: AbortBackupRestore, Name: r.Member, Reason: v1beta2.ReasonBackupRestoreRecordInvalid,
			Message: fmt.Sprintf("the recorded restore of s3://%s into %s is not one the operator is carrying out (%s); it is forgotten and nothing is deleted", r.Path, r.Member, why)}
	}
	if o.MembersKnown && len(o.Members) == 1 {
		m := o.Members[0]
		if m.Name == r.Member && m.Reachable && o.LeaderID == m.ID && m.Revision >= r.Revision {
			return Action{Kind: FinishBackupRestore, Name: r.Member, ID: m.ID, Revision: r.Revision, Reason: v1beta2.ReasonRestoredFromBackup,
				Message: fmt.Sprintf("member %s serves the backup s3://%s of EtcdBackup %s (revision %d); writes after revision %d are gone; growing back to %d members",
					r.Member, r.Path, r.Backup, m.Revision, r.Revision, d.Size)}
		}
	}
	abort := func(why string) Action {
		a := Action{Kind: AbortBackupRestore, Name: r.Member, Reason: v1beta2.ReasonBackupRestoreAborted, DeletePod: pod != nil && !pod.Deleting,
			Message: fmt.Sprintf("restore of s3://%s into %s abandoned: %s; no backup was touched", r.Path, r.Member, why)}
		if a.DeletePod && backupRestoreStale(d, o) {
			// An operator aborts within a reconcile of the time running out; a record
			// this far past it replays one that finished, whose member may now serve.
			a.DeletePod = false
			a.Message += fmt.Sprintf("; the record is long past its time, so pod %s is left in place", r.Member)
		}
		return a
	}
	switch {
	case !d.RestoreFromBackup:
		return abort("the opt-in to restore from backup was withdrawn")
	case pod != nil && pod.gone():
		return abort(fmt.Sprintf("the member's pod %s is gone", r.Member))
	}
	if why := backupRestoreOverdue(d, o); why != "" {
		return abort(why)
	}
	switch {
	case pod == nil:
		ver, err := ParseVersion(d.Version)
		if err != nil {
			return abort(fmt.Sprintf("version %q: %v", d.Version, err))
		}
		return Action{Kind: RestoreFromBackup, Name: r.Member, Version: ver.String(), Revision: r.Revision, Reason: v1beta2.ReasonRestoringFromBackup,
			Message: fmt.Sprintf("creating member %s from backup s3://%s (revision %d)", r.Member, r.Path, r.Revision)}
	}
	return wait(v1beta2.ReasonRestoringFromBackup, fmt.Sprintf("waiting for member %s to restore s3://%s (revision %d) and serve", r.Member, r.Path, r.Revision), requeueShort)
}

// backupRestoreOverdue says why a recorded restore has run out of time, or "". The
// restore step may take DefaultBackupRestoreTimeout from the decision (a big download);
// a step that never started, and etcd after the step finished, get RecoveryTimeout.
func backupRestoreOverdue(d Desired, o Observed) string {
	r := o.BackupRestore
	switch {
	case !r.StepDoneAt.IsZero():
		if o.Now.Sub(r.StepDoneAt) > d.RecoveryTimeout {
			return fmt.Sprintf("the member did not serve within %s of its restore step finishing", d.RecoveryTimeout)
		}
	case r.StepStarted:
		if o.Now.Sub(r.StartedAt) > DefaultBackupRestoreTimeout {
			return fmt.Sprintf("the restore step did not finish within %s", DefaultBackupRestoreTimeout)
		}
	default:
		if o.Now.Sub(r.StartedAt) > d.RecoveryTimeout {
			return fmt.Sprintf("the member's restore step did not start within %s", d.RecoveryTimeout)
		}
	}
	return ""
}

// backupRestoreStale: the member's restore step finished (so its etcd may have served
// since) over twice the time backupRestoreOverdue gives etcd after it.
func backupRestoreStale(d Desired, o Observed) bool {
	r := o.BackupRestore
	return !r.StepDoneAt.IsZero() && o.Now.Sub(r.StepDoneAt) > 2*d.RecoveryTimeout
}

// backupRestoreRecordInvalid says why a recorded restore is not one the controller is
// carrying out, or "" if it is. Once its pod exists, the pod's marker proves it. Before,
// the cluster must still be totally lost, with the opt-in, apart from what the restore
// itself creates: objects named after the recorded member (its claim, or its pod seen by
// the API server before the cache) are the restore's own and do not count. The grace
// and the backup were proven when the record was written; they are not asked again (the
// controller stops timing the loss and listing backups once the restore is recorded).
func backupRestoreRecordInvalid(d Desired, o Observed, pod *Pod) string {
	r := o.BackupRestore
	if pod != nil {
		return recordedPodInvalid(o, pod, r.Member, r.Token, "that restore's member")
	}
	if !IsMemberName(d.ClusterName, r.Member) {
		return fmt.Sprintf("%q is not a member name of this cluster", r.Member)
	}
	var others []string
	for _, c := range o.Claims {
		if c != r.Member {
			others = append(others, c)
		}
	}
	switch {
	case !d.RestoreFromBackup:
		return "restore from backup is not allowed (no opt-in)"
	case !o.Bootstrapped:
		return "the cluster never formed"
	case o.MembersKnown && len(o.Members) > 0:
		return "a member answers"
	case len(o.Pods) > 0:
		return fmt.Sprintf("member pod %s exists", o.Pods[0].Name)
	case len(others) > 0:
		return fmt.Sprintf("member claims %v exist: their data may survive", others)
	}
	return ""
}
