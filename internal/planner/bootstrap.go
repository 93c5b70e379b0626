package planner

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planBootstrap is the bootstrap rule: no member list and the cluster never formed.
//   - no pods → Bootstrap with all Size members at once in one initial cluster.
//     Growing a new cluster one member at a time would make the first member a single
//     point of failure and every later add a membership change. Recorded
//     BootstrapMembers are reused so an interrupted bootstrap converges on the same
//     initial cluster.
//   - pods exist → Bootstrap again (the controller creates the recorded members whose
//     pods are missing), else Wait for the cluster to form. Nothing is deleted during
//     bootstrap: pods without a member are normal then. A bootstrap that never forms
//     follows a corrected spec: a pod lacking a field only a new pod takes up, whose etcd
//     never ran, is deleted and created again from the spec (DeletePod, then Bootstrap;
//     planBootstrapRecreate); the etcd image of a pod whose etcd is not running is set
//     to the spec's in place (FixPodImage), one pod at a time; an etcd that ran only
//     within the allowed version skew.
//
// The recorded members are used only if they are Size names of the cluster's naming
// that cover every pod, and a pod with a member ID (bootstrap pods have none) means the
// cluster formed, whatever status says (formedOnce; Plan then goes on to the recreate rule).
func planBootstrap(d Desired, o Observed) Action {
	ver, err := ParseVersion(d.Version)
	if err != nil {
		return wait(v1beta2.ReasonInvalidSpec, "cannot bootstrap: "+err.Error(), 0)
	}
	podByName := map[string]*Pod{}
	for i := range o.Pods {
		podByName[o.Pods[i].Name] = &o.Pods[i]
	}
	recorded := o.BootstrapMembers
	if !bootstrapRecordFits(d, o) {
		recorded = nil
	}
	if len(o.Pods) == 0 {
		names := recorded
		if len(names) != d.Size {
			avoid := map[string]bool{}
			for _, n := range o.RetiredNames {
				avoid[n] = true
			}
			names = NewMemberNames(d.ClusterName, o.nameSeed(), d.Size, avoid)
		}
		return bootstrapAction(names, ver, v1beta2.ReasonBootstrapping, fmt.Sprintf("creating a %d-member cluster", len(names)))
	}
	if len(recorded) == 0 {
		return wait(v1beta2.ReasonBootstrapUnknown, "member pods exist but no initial cluster is recorded; waiting for the cluster to form (nothing is deleted during bootstrap)", requeueWait)
	}
	// Pods that lack the corrected spec go first, before any missing pod is created:
	// once a pod of the corrected spec runs etcd, the others can no longer be told from
	// pods that ran.
	if a, ok := planBootstrapRecreate(o); ok {
		return a
	}
	var missing []string
	for _, n := range recorded {
		if podByName[n] == nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return bootstrapAction(recorded, ver, v1beta2.ReasonCompletingBootstrap, "creating missing initial member pods: "+strings.Join(missing, ", "))
	}
	if a, ok := planBootstrapImages(d, o, ver); ok {
		return a
	}
	return wait(v1beta2.ReasonWaitingForClusterToForm, "all initial member pods exist; waiting for a member to answer", requeueWait)
}

// planBootstrapImages lets a corrected spec reach a bootstrap that never formed (e.g. a
// mistyped version or repository whose image cannot be pulled): one pod at a time, the
// etcd image of a pod whose etcd is not running is set to the spec's, in place. The pod
// keeps its name, volume and claim. An etcd that has run may have written data, so it
// is moved only within the skew an upgrade allows; one that never ran wrote nothing.
func planBootstrapImages(d Desired, o Observed, ver Version) (Action, bool) {
	if d.Image == "" {
		return Action{}, false
	}
	pods := make([]*Pod, 0, len(o.Pods))
	for i := range o.Pods {
		pods = append(pods, &o.Pods[i])
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		if p.Image == "" || p.Image == d.Image || p.EtcdRunning || p.Deleting {
			continue
		}
		if !p.EtcdNeverRan {
			cur, err := ParseVersion(p.Version)
			if err != nil || CheckSkew(cur, ver) != nil {
				continue
			}
		}
		return Action{Kind: FixPodImage, Name: p.Name, Version: ver.String(), Reason: v1beta2.ReasonCorrectingBootstrap,
			Message: fmt.Sprintf("the cluster never formed; setting pod %s's etcd image from %s to %s as the spec now says", p.Name, p.Image, d.Image)}, true
	}
	return Action{}, false
}

// planBootstrapRecreate lets any other corrected field reach a bootstrap that never
// formed (an unsatisfiable nodeSelector, a mistyped TLS Secret name, a claim spec no
// volume can be provisioned for): a pod that lacks a field of the spec only a new pod
// takes up (Drift: NewPod, TLS, Held, Claim) and whose etcd never ran is deleted, one per
// plan, and completing the bootstrap creates it again from the spec, under the same name
// and initial cluster. Its claim goes with it only if the claim spec changed and the
// claim was never bound: a claim bound to a volume is kept. Nothing is deleted once any
// pod lacking the spec has run etcd: it may have written data, and the corrected pods
// would then join a cluster on another configuration.
func planBootstrapRecreate(o Observed) (Action, bool) {
	var stale []*Pod
	for i := range o.Pods {
		p := &o.Pods[i]
		if !bootstrapDrift(p.Drift) {
			continue
		}
		if p.EtcdRunning || !p.EtcdNeverRan {
			return Action{}, false
		}
		if !p.Deleting {
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return Action{}, false
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].Name < stale[j].Name })
	p := stale[0]
	fields := append(append([]string(nil), p.Drift.Fields...), p.Drift.Held...)
	claim := p.Drift.Claim && slices.Contains(o.UnboundClaims, p.Name)
	note := ""
	switch {
	case claim:
		fields = append(fields, "pod.persistentVolumeClaimSpec")
		note = " and its claim, which was never bound,"
	case p.Drift.Claim:
		fields = append(fields, "pod.persistentVolumeClaimSpec")
		note = " (its claim is bound to a volume and is kept as it is)"
	}
	return Action{Kind: DeletePod, Name: p.Name, KeepClaim: !claim, Reason: v1beta2.ReasonCorrectingBootstrap,
		Message: fmt.Sprintf("the cluster never formed and etcd never ran in pod %s, which lacks the spec's %s; deleting it%s to create it again from the corrected spec",
			p.Name, strings.Join(fields, ", "), note)}, true
}

// bootstrapDrift: the pod lacks a field of the spec that only a new pod takes up.
func bootstrapDrift(d Drift) bool {
	return d.NewPod || d.TLS || d.Claim || len(d.Held) > 0
}

// formedOnce reports what the pods prove whatever status says: a pod annotated with a
// member ID was created for a member of a formed cluster (bootstrap pods never carry
// one), so the cluster is not bootstrapping.
func formedOnce(o Observed) bool {
	for i := range o.Pods {
		if o.Pods[i].MemberID != 0 {
			return true
		}
	}
	return false
}

// bootstrapRecordFits reports whether the recorded initial members are a bootstrap the
// controller could have planned: Size distinct names of this cluster's naming, and
// every existing pod among them (the controller records them before creating any pod).
// Anything else is not acted on: new pods under other names would start a second
// cluster beside the pods that exist. (A size changed in the middle of a bootstrap
// therefore waits for the bootstrap's pods rather than completing it.)
func bootstrapRecordFits(d Desired, o Observed) bool {
	if len(o.BootstrapMembers) != d.Size {
		return false
	}
	seen := map[string]bool{}
	for _, n := range o.BootstrapMembers {
		if seen[n] || !IsMemberName(d.ClusterName, n) {
			return false
		}
		seen[n] = true
	}
	for i := range o.Pods {
		if !seen[o.Pods[i].Name] {
			return false
		}
	}
	return true
}

func bootstrapAction(names []string, ver Version, reason, msg string) Action {
	ms := make([]NewMember, len(names))
	for i, n := range names {
		ms[i] = NewMember{Name: n}
	}
	return Action{Kind: Bootstrap, Members: ms, Version: ver.String(), Reason: reason, Message: msg}
}
