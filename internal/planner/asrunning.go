package planner

// New pods while a change is refused or held. A change of the members' TLS that the rollout rule
// refuses (TLSRefusal), or a field it holds (Pod.Drift.Held: the cluster domain), is
// kept from running members by restarting none of them. But a pod is also created
// outside any rollout: a member's pod that went missing comes back on its claim (rule
// 5), a learner is added to scale up or to replace a dead member (the dead-member and scale-up rules). Such
// a pod rendered from the spec would take the refused change up and join as a member
// its peers cannot use: plaintext peers among TLS ones, certificates that do not
// verify, a peer URL under another domain. So while something is refused or held, a
// CreatePod or AddLearner says AsRunning, and the controller renders that pod with the
// TLS Secrets and cluster domain the running members' pods use instead of the spec's.
// A proven rotation and the steps of turning TLS on are neither refused nor held: new
// pods take the spec up there, as the rollout does.

// NewPodsAsRunning: a pod created now must run as the running members do, not as the
// spec says, because the spec's change of them is refused or held.
func NewPodsAsRunning(d Desired, o Observed) bool {
	if TLSRefusal(d, o) != "" {
		return true
	}
	for i := range o.Pods {
		if len(o.Pods[i].Drift.Held) > 0 {
			return true
		}
	}
	return false
}

// createsPod: the action creates a member pod of a running cluster.
func createsPod(k Kind) bool { return k == CreatePod || k == AddLearner }
