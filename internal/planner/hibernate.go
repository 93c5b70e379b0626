package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The hibernation rule (spec.size 0).
//
// Size 0 on a cluster whose members keep their data on claims stops every member pod and
// keeps everything else: the claims (their data), etcd's membership (no member is
// removed: the members are only stopped), and the records in status, which is how the
// same members come back: the member names (KnownMembers, kept while no member answers),
// a learner in flight (Pending) and an unfinished bootstrap's initial members.
//   - No claims in the spec (Desired.DataOnClaims false) → Wait(InvalidSpec): a member's
//     data lives only as long as its pod. Admission refuses size 0 without claims; this
//     is the backstop for an object stored before that rule, and nothing is stopped.
//   - A member pod without its claim (it predates the claims) → Wait(HibernationRefused)
//     naming them: stopping it would lose its data, so no pod is stopped.
//   - A pod still running → DeletePod with KeepClaim, one per plan: followers first, the
//     leader last, so leadership moves at most once and the last pod to stop holds the
//     newest log. No quorum is needed: nothing of the membership changes, and a member
//     stopped without quorum restarts on the same data.
//   - Pods still terminating → Wait(Hibernating); none left → Wait(Hibernated).
//
// A size above 0 again is the ordinary path: with no member answering, the recreate rule gives every
// recorded member with a claim its pod back (recreate.go), same name, same member ID,
// same data, on the version they last ran (status.currentVersion), not on a spec.version
// changed meanwhile; once they answer, a size that differs from the members' number is
// reached one member at a time (the scale-down and scale-up rules), and a changed version
// by the upgrade rule with all its checks, as any upgrade or downgrade. A cluster that
// never formed bootstraps at the new size (the bootstrap rule).
//
// It comes after a recorded recovery or restore (the recovery or backup-restore rule), which is finished or abandoned
// first: stopping the pods under it would leave its record unprovable.
func planHibernate(d Desired, o Observed) Action {
	if !d.DataOnClaims {
		return wait(v1beta2.ReasonInvalidSpec, "spec.size 0 (hibernation) needs spec.pod.persistentVolumeClaimSpec: without claims a member's data lives only as long as its pod; nothing is stopped", 0)
	}
	claims := map[string]bool{}
	for _, c := range o.Claims {
		claims[c] = true
	}
	var unclaimed, terminating []string
	for _, p := range o.Pods {
		if !claims[p.Name] && !p.Deleting {
			unclaimed = append(unclaimed, p.Name)
		}
	}
	if len(unclaimed) > 0 {
		sort.Strings(unclaimed)
		return wait(v1beta2.ReasonHibernationRefused, fmt.Sprintf("spec.size 0 (hibernation): member pods %s have no claim (they predate spec.pod.persistentVolumeClaimSpec) and would lose their data; nothing is stopped",
			strings.Join(unclaimed, ", ")), requeueLong)
	}
	if why := hibernationHeld(d, o); why != "" {
		return wait(v1beta2.ReasonHibernationRefused, fmt.Sprintf("spec.size 0 (hibernation): %s; hibernated members all come back at once on the spec's settings, so nothing is stopped: let the change roll out, or revert it, first", why), requeueLong)
	}
	leader := hibernationLeaderPod(o)
	var next *Pod
	for i := range o.Pods {
		p := &o.Pods[i]
		if p.Deleting {
			terminating = append(terminating, p.Name)
			continue
		}
		if next == nil || stopsBefore(p, next, leader) {
			next = p
		}
	}
	if next != nil {
		return Action{Kind: DeletePod, Name: next.Name, ID: next.MemberID, KeepClaim: true, Reason: v1beta2.ReasonHibernating,
			Message: fmt.Sprintf("spec.size 0 (hibernation): stopping member pod %s; its claim and membership are kept", next.Name)}
	}
	if len(terminating) > 0 {
		sort.Strings(terminating)
		return wait(v1beta2.ReasonHibernating, fmt.Sprintf("spec.size 0 (hibernation): waiting for pods %s to stop", strings.Join(terminating, ", ")), requeueWait)
	}
	return wait(v1beta2.ReasonHibernated, hibernatedMessage(o), requeueLong)
}

// hibernationHeld says why the running pods' TLS or cluster domain differ from the spec's
// in a way the rollout rule does not (or not yet) roll out, "" when they do not: a refused or held
// change (NewPodsAsRunning), or a TLS scheme a pod does not run yet (turning TLS on or
// off half-way). Resumed members are created from the spec all at once, with no running
// member to take the settings from, which is what the rollouts exist to avoid. (Admission
// refuses such a change while the size is 0, so only one made before is caught here.)
func hibernationHeld(d Desired, o Observed) string {
	if r := TLSRefusal(d, o); r != "" {
		return "the change of the members' TLS is refused (" + r + ")"
	}
	var pods []string
	for _, p := range o.Pods {
		if p.Deleting {
			continue
		}
		if len(p.Drift.Held) > 0 || p.Drift.TLS && (p.PeerTLS != d.PeerTLS || p.ClientTLS != d.ClientTLS) {
			pods = append(pods, p.Name)
		}
	}
	if len(pods) == 0 {
		return ""
	}
	sort.Strings(pods)
	return fmt.Sprintf("member pods %s do not run the spec's TLS scheme or cluster domain yet", strings.Join(pods, ", "))
}

// stopsBefore orders the pods hibernation stops: followers first, by name; the leader's
// pod last.
func stopsBefore(p, q *Pod, leader string) bool {
	if (p.Name == leader) != (q.Name == leader) {
		return q.Name == leader
	}
	return p.Name < q.Name
}

// hibernatedMessage says what a size above 0 brings back.
func hibernatedMessage(o Observed) string {
	members := recordedMembers(o.KnownMembers)
	if len(members) == 0 {
		return "spec.size 0 (hibernation): no member pod runs; a size above 0 creates the cluster"
	}
	return fmt.Sprintf("spec.size 0 (hibernation): no member pod runs; members %s keep their data on their claims and come back when spec.size is raised",
		strings.Join(members, ", "))
}

// hibernationLeaderPod is the name of the leader's pod ("" when no leader is known).
func hibernationLeaderPod(o Observed) string {
	if o.LeaderID == 0 {
		return ""
	}
	for _, p := range o.Pods {
		if p.MemberID == o.LeaderID {
			return p.Name
		}
	}
	for _, m := range o.Members {
		if m.ID == o.LeaderID {
			return m.Name
		}
	}
	return ""
}

// summarizeHibernation replaces the conditions of a cluster at size 0 whose pods are
// being stopped or are stopped: it is unavailable on purpose, which is no failure
// (Available False with reason Hibernating or Hibernated, announced by no warning), nothing
// is repaired, scaled or upgraded, and once no pod runs the phase is Hibernated.
func summarizeHibernation(a Action, s *Summary) {
	if a.Reason != v1beta2.ReasonHibernating && a.Reason != v1beta2.ReasonHibernated {
		return
	}
	if a.Reason == v1beta2.ReasonHibernated {
		s.Phase = v1beta2.ClusterPhaseHibernated
	}
	s.Conditions = []Condition{
		{Type: v1beta2.ClusterConditionAvailable, Reason: a.Reason, Message: a.Message},
		{Type: v1beta2.ClusterConditionRecovering, Reason: v1beta2.ReasonNothingToRepair, Message: "no member is being repaired"},
		{Type: v1beta2.ClusterConditionScaling, Status: a.Reason == v1beta2.ReasonHibernating, Reason: a.Reason, Message: a.Message},
		{Type: v1beta2.ClusterConditionUpgrading, Reason: a.Reason, Message: "no member runs while the cluster is hibernated"},
	}
}
