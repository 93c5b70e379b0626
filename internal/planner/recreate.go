package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The recreate rule: pods back on their data.
//
// A started voter whose pod is missing while its data claim exists (a pod deleted or
// evicted with a PersistentVolumeClaim) → CreatePod with the same name and member ID:
// the member restarts on its data, as a StatefulSet pod would, instead of being
// replaced by an empty one. This comes before the quorum rules: it changes no
// membership, and it may be what brings quorum back. Without any member list, the
// member names recorded in status (KnownMembers) that have a claim and no pod get their
// pods back, one per plan. A Failed or Succeeded pod of such a member is deleted first
// (the pod only, never the claim). A member with a claim whose pod is terminating is
// replaced only after ReplaceUnhealthyAfter, not ReplaceGoneAfter (see view.grace):
// normally its pod disappears first and this rule brings it back.

// planRecreateKnown is the recreate rule without a member list: the recorded members with a claim
// get their pods back, so that a cluster whose pods all went (a drain, an eviction wave,
// every node off) restarts on its data, all members together, as the same cluster.
// They restart on the version they last ran (Observed.RecordedVersion; spec.version only
// when none was recorded), not on a spec.version changed meanwhile (while hibernated, say):
// all members at once onto another version would skip what the upgrade and downgrade rules
// check and do one member at a time (skew, etcd's downgrade, storage versions, the backup
// before a minor step), and a version that cannot run would crash-loop every member. Once
// they answer, the upgrade rule moves them to spec.version as any upgrade or downgrade.
//   - no pod → CreatePod, one per plan (the next plan creates the next);
//   - a Failed or Succeeded pod (evicted, or a node that came back after a restart) →
//     DeletePod with KeepClaim: it never runs again, and its name must be free;
//   - every pod left is such a member's and being deleted (a node that is down holds its
//     evicted pods until it returns) → Wait: the members restart on their claims once
//     the pods are gone; nothing is lost, so nothing is reported lost.
//
// A claim counts only as the recorded member's: its name is a member name that status
// recorded (KnownMembers, kept while no member answers) and the cluster controls it
// (Observed.Claims). A claim of any other name is never started on.
func planRecreateKnown(d Desired, o Observed) (Action, bool) {
	pods := map[string]*Pod{}
	for i := range o.Pods {
		pods[o.Pods[i].Name] = &o.Pods[i]
	}
	claims := map[string]bool{}
	for _, c := range o.Claims {
		claims[c] = true
	}
	known := append([]string(nil), o.KnownMembers...)
	sort.Strings(known)
	ver, ok := recordedVersion(o)
	if !ok {
		var err error
		if ver, err = ParseVersion(d.Version); err != nil {
			return Action{}, false
		}
	}
	onClaim := map[string]bool{}
	var terminating []string
	for _, n := range known {
		if !claims[n] || onClaim[n] {
			continue
		}
		onClaim[n] = true
		p := pods[n]
		switch {
		case p == nil:
			return Action{Kind: CreatePod, Name: n, Version: ver.String(), Reason: v1beta2.ReasonRecreatingPod,
				Message: fmt.Sprintf("no member answers; member %s has no pod but its claim holds its data; recreating the pod", n)}, true
		case p.Deleting:
			terminating = append(terminating, n)
		case p.Phase == PodFailed || p.Phase == PodSucceeded:
			return Action{Kind: DeletePod, Name: n, KeepClaim: true, Reason: v1beta2.ReasonRecreatingPod,
				Message: fmt.Sprintf("no member answers; pod %s of member %s is %s and will not run again; deleting it (not its claim) to recreate it", n, n, p.Phase)}, true
		}
	}
	if len(terminating) == 0 {
		return Action{}, false
	}
	for i := range o.Pods {
		if !onClaim[o.Pods[i].Name] || !o.Pods[i].Deleting {
			return Action{}, false // another pod may yet answer: the no-members rule decides
		}
	}
	return wait(v1beta2.ReasonRecreatingPod, fmt.Sprintf("no member answers; pods %s are being deleted (a node that is down keeps its pods until it returns); their members restart on their claims once they are gone",
		strings.Join(terminating, ", ")), requeueWait), true
}

// planRecreate gives a started voter whose pod is missing (not merely failing) its pod
// back when its data claim exists (the recreate rule with a member list).
func (v *view) planRecreate() (Action, bool) {
	for _, m := range v.voters {
		if m.Name == "" || !v.hasClaim(m.Name) {
			continue
		}
		// A finished pod (evicted, or its container exited with restartPolicy Never
		// semantics) never runs again; its object must go before the member's pod can
		// come back under the same name. Its claim stays.
		if p := v.podOf[m.ID]; p != nil && !p.Deleting && (p.Phase == PodFailed || p.Phase == PodSucceeded) && p.Name == m.Name {
			return Action{Kind: DeletePod, Name: p.Name, ID: m.ID, KeepClaim: true, Reason: v1beta2.ReasonRecreatingPod,
				Message: fmt.Sprintf("pod %s of member %s (%x) is %s and will not run again; deleting it (not its claim) to recreate it", p.Name, m.Name, m.ID, p.Phase)}, true
		}
		if v.podOf[m.ID] != nil || v.podNameTaken(m.Name) {
			continue
		}
		return Action{Kind: CreatePod, Name: m.Name, ID: m.ID, Version: v.recreateVersion(), Reason: v1beta2.ReasonRecreatingPod,
			Message: fmt.Sprintf("member %s (%x) has no pod but its claim holds its data; recreating the pod", m.Name, m.ID)}, true
	}
	return Action{}, false
}

// recreateVersion is the version a member put back on its data restarts on: the lowest
// any member runs (the cluster's version, which every member's data can be read by: etcd
// raises the storage version only once all run the newer minor), else the version
// recorded when they last answered, else spec.version. Not spec.version while it differs:
// a member restarted on its data on another version is an upgrade or downgrade step, which
// the upgrade rule takes, with its checks, once the member answers (a cluster resuming from
// hibernation with spec.version changed, or a pod lost while an upgrade waits).
func (v *view) recreateVersion() string {
	var lowest *Version
	for _, m := range v.members {
		if rv, err := ParseVersion(v.runningVersion(m)); err == nil && (lowest == nil || rv.Compare(*lowest) < 0) {
			lowest = &rv
		}
	}
	if lowest != nil {
		return lowest.String()
	}
	if rv, ok := recordedVersion(v.o); ok {
		return rv.String()
	}
	return v.newMemberVersion()
}

// recordedVersion is Observed.RecordedVersion when it is a version this operator runs (a
// record an older operator or a person wrote may not be).
func recordedVersion(o Observed) (Version, bool) {
	if CheckSupported(o.RecordedVersion) != nil {
		return Version{}, false
	}
	v, err := ParseVersion(o.RecordedVersion)
	return v, err == nil
}
