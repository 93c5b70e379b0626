package planner

import (
	"fmt"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planRecovery is the recovery rule: a recorded recovery (Observed.Recovery) is finished before
// anything else. The new member's pod copies the source's data (a snapshot streams
// without quorum) and bootstraps a one-member cluster under a new token, so no old
// member can join it; the controller dials only that member meanwhile.
//   - the new cluster answers: exactly the new member, reachable, its own leader, at a
//     revision >= the recorded one → FinishRecovery (delete the old members' pods;
//     later plans regrow by scale-up).
//   - the opt-in was withdrawn, the new pod is gone, the source pod is gone while the
//     new pod is still Pending (its copy step not done), or RecoveryTimeout has passed
//     → AbortRecovery (delete the new pod, forget the recovery; the quorum rule may then start
//     another attempt).
//   - no new pod yet → ForceNewCluster again with the recorded values.
//   - otherwise Wait.
//
// A record the operator could not have made is forgotten (AbortRecovery, nothing
// deleted). Nothing of the old cluster is deleted before the new one serves at least
// the recorded revision, so every outcome short of success, and an abandoned attempt,
// loses nothing.
func planRecovery(d Desired, o Observed) Action {
	r := o.Recovery
	var newPod, srcPod *Pod
	for i := range o.Pods {
		switch o.Pods[i].Name {
		case r.Member:
			newPod = &o.Pods[i]
		case r.Source:
			srcPod = &o.Pods[i]
		}
	}
	if why := recoveryRecordInvalid(d, o, newPod); why != "" {
		return Action{Kind: AbortRecovery, Name: r.Member, Reason: v1beta2.ReasonRecoveryRecordInvalid,
			Message: fmt.Sprintf("the recorded recovery into %s is not one the operator is carrying out (%s); it is forgotten and nothing is deleted", r.Member, why)}
	}
	if o.MembersKnown && len(o.Members) == 1 && newPod != nil {
		m := o.Members[0]
		if m.Name == r.Member && m.Reachable && o.LeaderID == m.ID && m.Revision >= r.Revision {
			return Action{Kind: FinishRecovery, Name: r.Member, ID: m.ID, Reason: v1beta2.ReasonRecovered,
				Message: fmt.Sprintf("member %s serves the data of %s (revision %d >= %d); removing the old members' pods", r.Member, r.Source, m.Revision, r.Revision)}
		}
	}
	abort := func(why string) Action {
		a := Action{Kind: AbortRecovery, Name: r.Member, Reason: v1beta2.ReasonRecoveryAborted, DeletePod: newPod != nil && !newPod.Deleting,
			Message: fmt.Sprintf("recovery from %s into %s abandoned: %s; the old members were not touched", r.Source, r.Member, why)}
		if a.DeletePod && !newPod.EtcdNeverRan && newPod.Phase != PodPending && o.Now.Sub(r.StartedAt) > 2*d.RecoveryTimeout {
			// An operator aborts within a reconcile of the timeout; a record this old
			// whose pod's etcd has run is one replayed (its pod's marker re-added after
			// the recovery finished), and its pod may now be a member of the regrown
			// cluster.
			a.DeletePod = false
			a.Message += fmt.Sprintf("; the record is older than %s, so pod %s is left in place", 2*d.RecoveryTimeout, r.Member)
		}
		return a
	}
	// The copy needs the source until the new pod's init step is done (the pod is
	// Pending until then).
	sourceGone := srcPod == nil || srcPod.gone()
	switch {
	case !d.QuorumLossRecovery:
		return abort("the opt-in to quorum-loss recovery was withdrawn")
	case newPod != nil && newPod.gone():
		return abort(fmt.Sprintf("the new member's pod %s is gone", r.Member))
	case sourceGone && (newPod == nil || newPod.Phase == PodPending):
		return abort(fmt.Sprintf("the source member's pod %s is gone before its data was copied", r.Source))
	case o.Now.Sub(r.StartedAt) > d.RecoveryTimeout:
		return abort(fmt.Sprintf("the new member did not serve within %s", d.RecoveryTimeout))
	case newPod == nil:
		version := d.Version
		if srcPod != nil && srcPod.Version != "" {
			version = srcPod.Version // never a different version than the data's
		}
		return Action{Kind: ForceNewCluster, From: r.SourceID, ID: r.SourceID, Name: r.Source, Revision: r.Revision,
			Members: []NewMember{{Name: r.Member}}, Version: version, Reason: v1beta2.ReasonQuorumLossRecovery,
			Message: fmt.Sprintf("creating member %s from the data of %s (revision %d)", r.Member, r.Source, r.Revision)}
	}
	return wait(v1beta2.ReasonRecovering, fmt.Sprintf("waiting for member %s to copy the data of %s (revision >= %d) and serve", r.Member, r.Source, r.Revision), requeueShort)
}

// recordedPodInvalid says why pod is not the member a recorded one-member start (a
// quorum-loss recovery or a restore from a backup) creates, or "" if it is: the
// controller marks that pod with the record's token, and the new cluster has exactly
// that member until the start finishes (nothing else runs meanwhile). One that lists
// others is a cluster that has moved on, and the record is a replay of one that finished.
func recordedPodInvalid(o Observed, pod *Pod, member, token, whose string) string {
	if pod.RecoveryToken == "" || pod.RecoveryToken != token {
		return fmt.Sprintf("pod %s is not %s", member, whose)
	}
	if o.MembersKnown {
		for _, m := range o.Members {
			if m.Name != member {
				return fmt.Sprintf("the cluster of pod %s has other members (%x)", member, m.ID)
			}
		}
	}
	return ""
}

// recoveryRecordInvalid says why a recorded recovery is not one the controller is
// carrying out, or "" if it is. Once its pod exists, the pod proves it: the controller
// marks the new member's pod with the recovery's token and removes the mark when the
// recovery finishes. Before, the old cluster must still call for exactly this
// recovery: quorum lost past its grace, the opt-in given, the source an alive voter.
func recoveryRecordInvalid(d Desired, o Observed, newPod *Pod) string {
	r := o.Recovery
	if newPod != nil {
		return recordedPodInvalid(o, newPod, r.Member, r.Token, "that recovery's new member")
	}
	if !IsMemberName(d.ClusterName, r.Member) {
		return fmt.Sprintf("%q is not a member name of this cluster", r.Member)
	}
	fresh := o
	fresh.Recovery = nil
	a := Plan(d, fresh)
	if a.Kind != ForceNewCluster {
		return "the cluster does not call for a recovery: " + a.Reason
	}
	v := newView(d, fresh)
	if m := v.byID[r.SourceID]; m == nil || m.IsLearner || m.Name != r.Source || !v.alive(m) {
		return fmt.Sprintf("%s (%x) is not an alive voting member", r.Source, r.SourceID)
	}
	// The source is the one the quorum rule picks (the survivor with the most data), never one a
	// record chose: a lagging survivor would lose committed writes.
	if a.From != r.SourceID {
		return fmt.Sprintf("%s is not the survivor with the most data (that is %s)", r.Source, a.Name)
	}
	return ""
}
