package planner

import (
	"fmt"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planScaleUp is the scale-up rule: voters < Size → AddLearner, one at a time. A learner does not
// count for quorum while it catches up, so adding one cannot hurt availability.
func (v *view) planScaleUp() (Action, bool) {
	if len(v.voters) >= v.d.Size {
		return Action{}, false
	}
	name := NewMemberNames(v.d.ClusterName, v.o.nameSeed(), 1, v.usedNames())[0]
	return Action{Kind: AddLearner, Name: name, Version: v.newMemberVersion(), Reason: v1beta2.ReasonScalingUp,
		Message: fmt.Sprintf("adding learner %s (%d of %d voting members)", name, len(v.voters), v.d.Size)}, true
}

// usedNames are the names a new member must not get: every member's, pod's, pending,
// retired and initial name, so no name (and no data under it) is ever reused.
func (v *view) usedNames() map[string]bool {
	used := map[string]bool{}
	for _, m := range v.members {
		used[m.Name] = true
	}
	for i := range v.o.Pods {
		used[v.o.Pods[i].Name] = true
	}
	if v.pending != nil {
		used[v.pending.Name] = true
	}
	for _, n := range v.o.RetiredNames {
		used[n] = true
	}
	for _, n := range v.o.BootstrapMembers {
		used[n] = true
	}
	return used
}

// newMemberVersion is the version for a pod created now: the desired one if
// the cluster may move to it, else the highest version running.
func (v *view) newMemberVersion() string {
	target, err := ParseVersion(v.d.Version)
	if err == nil && CheckUpgrade(v.d, v.o) == nil {
		return target.String()
	}
	var best *Version
	for _, m := range v.members {
		rv, err := ParseVersion(v.runningVersion(m))
		if err == nil && (best == nil || rv.Compare(*best) > 0) {
			best = &rv
		}
	}
	if best != nil {
		return best.String()
	}
	return strings.TrimPrefix(v.d.Version, "v")
}
