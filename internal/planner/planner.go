// Package planner decides the single next safe step for one etcd cluster.
//
// Plan is a pure function from (Desired, Observed) to one Action: no I/O,
// no clock (Observed.Now is an input), no randomness (names derive from
// Observed.NameSeed and Observed.Now). The controller observes, calls Plan,
// executes the one action, records what it must (Pending, Bootstrapped,
// BootstrapMembers, RetiredNames, the *Since times) and calls Plan again.
// Every safety rule of the operator lives here. The rules below are checked
// in this order and the first that applies wins.
//
// # Vocabulary
//
// A voter is a non-learner member. A member is reachable when it answered
// Status in this observation; it is alive when, in addition, it has started
// (published its name: a member that has not started has an empty name in
// MemberList) and its pod exists and is not gone (Failed, Succeeded or being
// deleted). Quorum(n) is n/2+1. "Down since" is the earliest recorded
// UnhealthySince of the member or its pod (Now when nothing is recorded yet,
// so the grace starts now), but never earlier than the pod's creation: a
// freshly created pod always gets its full grace. Pods are matched to
// members by the member-ID annotation first and by name otherwise; a member
// that has not started is matched only by ID or by the Pending record.
//
// # Rule 1: paused
//
// Paused → Wait. The user asked us to touch nothing, so nothing is touched,
// not even orphan pods.
//
// # Rule 2: invalid size
//
// Size < 1 → Wait(InvalidSpec). There is no safe move towards an impossible
// target; a zero-member cluster would destroy the data.
//
// # Rule 2a: recovery in progress
//
// A recorded recovery (Observed.Recovery) is finished before anything else.
// The new member's pod copies the source's data (a snapshot streams without
// quorum) and bootstraps a one-member cluster under a new token, so no old
// member can join it; the controller dials only that member meanwhile.
//   - the new cluster answers: exactly the new member, reachable, its own
//     leader, at a revision >= the recorded one → FinishRecovery (delete
//     the old members' pods; later plans regrow by scale-up).
//   - the opt-in was withdrawn, the new pod is gone, the source pod is gone
//     while the new pod is still Pending (its copy step not done), or
//     RecoveryTimeout has passed → AbortRecovery (delete the new pod, forget
//     the recovery; rule 4 may then start another attempt).
//   - no new pod yet → ForceNewCluster again with the recorded values.
//   - otherwise Wait.
//
// Nothing of the old cluster is deleted before the new one serves at least
// the recorded revision, so an abandoned attempt loses nothing.
//
// # Rule 3b: pods back on their data
//
// A started voter whose pod is missing while its data claim exists (a pod
// deleted or evicted with a PersistentVolumeClaim) → CreatePod with the same
// name and member ID: the member restarts on its data, as a StatefulSet pod
// would, instead of being replaced by an empty one. This comes before the
// quorum rules: it changes no membership, and it may be what brings quorum
// back. Without any member list, the member names recorded in status
// (KnownMembers) that have a claim and no pod get their pods back, one per
// plan. A Failed or Succeeded pod of such a member is deleted first (the pod
// only, never the claim). A member with a claim whose pod is terminating is
// replaced only after ReplaceUnhealthyAfter, not ReplaceGoneAfter: normally its
// pod disappears first and rule 3b brings it back.
//
// # Rule 3: no member list
//
// No endpoint answered MemberList (a serializable list answers without
// quorum, so this means no etcd process is reachable at all):
//   - Never bootstrapped, no pods → Bootstrap with all Size members at once
//     in one initial cluster. Growing a new cluster one member at a time
//     would make the first member a single point of failure and every later
//     add a membership change. Recorded BootstrapMembers are reused so an
//     interrupted bootstrap converges on the same initial cluster.
//   - Never bootstrapped, pods exist → Bootstrap again (the controller
//     creates the recorded members whose pods are missing), else Wait for
//     the cluster to form. Nothing is deleted during bootstrap: pods without
//     a member are normal then. A bootstrap that never forms follows a
//     corrected spec: the etcd image of a pod whose etcd is not running is set
//     to the spec's in place (FixPodImage), one pod at a time; an etcd that
//     ran only within the allowed version skew. The recorded members are used
//     only if they are Size names of the cluster's naming that cover every
//     pod, and a pod with a member ID (bootstrap pods have none) means the
//     cluster formed, whatever status says.
//   - Bootstrapped, no pod at all → QuorumLost: the data is gone; only a
//     restore can help, and re-bootstrapping would silently serve an empty
//     cluster under the old name.
//   - Bootstrapped, pods exist → Wait, or QuorumLost (a report only) once
//     every pod has been unready for QuorumLossGrace. Without a member list
//     no survivor can be named, so nothing destructive is possible.
//
// # Rule 4: quorum
//
// Fewer than Quorum(voters) voters reachable, or no reachable leader:
//   - a quorum is reachable but there is no leader → Wait: an election
//     takes seconds.
//   - the leader is reachable but fewer voters than a quorum → Wait
//     (PartialVisibility): etcd leaders step down when they lose quorum
//     (CheckQuorum), so a live leader means our view is partial, not that
//     the cluster is dead.
//   - otherwise Wait until quorum has been lost for QuorumLossGrace, counted
//     from the moment the quorum-breaking voter went down; elections and
//     restarts lose quorum briefly.
//   - then QuorumLost, touching nothing, unless QuorumLossRecovery is set:
//     ForceNewCluster from the alive voter with the highest revision.
//     Every committed entry is on a majority of voters, so that voter holds
//     everything that survived; learners are not in that majority and may
//     lag, so they are never the source. The controller records the
//     recovery (source, its revision, a new member name) before acting, and
//     rule 2a takes over.
//
// Without quorum no membership change is even possible, and guessing would
// risk the data, so no rule below runs.
//
// # Rule 5: orphan pods
//
// A pod with no matching member that is not the pending member's pod → one
// DeletePod at a time, and only when a majority of the voters, each asked
// for its own member list (Observed.MemberLists), lists no member for the
// pod: never on one member's word, which may be stale or wrong. Never
// before Bootstrapped; never a pod already being
// deleted; never a pod younger than ReplaceGoneAfter (a list read from a
// lagging member may not yet show a member added a moment ago; Done then
// carries a RequeueAfter); never a second pod annotated with the ID of a
// member that has not started (which one will start is unknowable; once it
// publishes its name the other no longer matches). A removed member's
// process must not keep running under our labels.
//
// # Rule 6: one membership change at a time
//
// A learner, a member that has not started, or the Pending record is an
// in-flight change. It is finished or abandoned before any other membership
// change, in this order:
//   - a learner no longer needed (voters that are not dead >= Size) →
//     RemoveMember; dead voters are about to be replaced, so a learner in
//     flight when a voter died still fills the gap.
//   - Pending older than LearnerTimeout → RemoveMember (stuck learner).
//   - its pod gone for ReplaceGoneAfter → RemoveMember.
//   - no pod, not started, name known from Pending → CreatePod (the pod
//     joins the existing cluster).
//   - no pod otherwise (started, or name unknown) → RemoveMember after
//     ReplaceGoneAfter: there is nothing to start.
//   - pod exists but the member has not started or does not answer → Wait,
//     or RemoveMember once down for ReplaceUnhealthyAfter (DNS lag is far
//     shorter).
//   - a started learner that has caught up (raft index within PromoteMaxLag
//     of the leader's and at least 90% of it, etcd's own promotion check) →
//     PromoteLearner; otherwise Wait.
//
// Removals and promotions also need rule 7's alive quorum. Removing a
// learner never changes the voter quorum, so abandoning one is always safe,
// and the next attempt uses a new name. The Pending record is cleared
// (Action.ClearPending) once its member is a started voter, or has been
// missing from the list for ReplaceGoneAfter after it was added.
//
// # Rule 7: alive quorum
//
// Fewer alive voters than a quorum, or the leader not alive → Wait. Every
// change below must leave an alive quorum, so it needs one now.
//
// # Rule 8: dead members
//
// A voter not alive for longer than its grace — ReplaceGoneAfter when its pod
// is missing or gone, ReplaceUnhealthyAfter otherwise (crash-looping,
// terminated, node not ready, Running but not answering) — is dead →
// ReplaceMember (remove it and its pod; later plans add a fresh member under
// a new name, never the old name or data). The one down longest goes first,
// one at a time, only with nothing in flight, and only if the alive voters
// stay >= Quorum(voters-1). Removing before adding restores fault tolerance
// sooner, and etcd refuses MemberAdd while a dead member is listed anyway. A
// member merely slow to start (DNS lag: pod Running, not yet Ready, name not
// yet resolvable) is never removed within its grace.
//
// # Rule 9: scale down
//
// Voters > Size → remove members that are not alive first (even within their
// grace: a removal is happening anyway), then the newest pod, then the
// highest name. If the victim is the leader → MoveLeader to an alive voter
// first (removing the leader stalls writes for an election). Wait instead if
// the alive voters after the removal would be fewer than the new quorum.
//
// # Rule 10: members within their grace
//
// Any voter down but still within its grace → Wait: it may come back, and
// its grace decides, not an unrelated scale-up or upgrade step.
//
// # Rule 11: scale up
//
// Voters < Size → AddLearner, one at a time. A learner does not count for
// quorum while it catches up, so adding one cannot hurt availability.
//
// # Rule 12: upgrade
//
// Some member's version differs from Version. Reached only with the cluster
// fully healthy, at full size and nothing in flight:
//   - skew: no major change, no minor downgrade, no skipped minor (3.6 → 3.7
//     ok, 3.5 → 3.7 refused; patch changes either way are fine) →
//     otherwise RefuseUpgrade with the reason. Nothing else is blocked.
//   - a member whose pod has the new version but which does not run it yet →
//     Wait: one member restarts at a time.
//   - a voter that answers but names no leader (restarted a moment ago, not
//     yet back in contact with the leader), or whose pod is not Ready → Wait:
//     the health gate between two restarts. Ready matters beyond etcd: the
//     client Service publishes only Ready pods, and the PodDisruptionBudget
//     counts the others as disrupted.
//   - followers first, one at a time, by name → UpgradeMember; the leader
//     last, after MoveLeader to an upgraded voter (one election instead of
//     one per restart). A one-member cluster is restarted in place: there is
//     nowhere to move leadership.
//
// # Rule 13
//
// Otherwise Done.
//
// # Precedence decisions
//
// Membership repair (rules 6–8) comes before scaling, and scaling before
// upgrading. A scale change made during a rolling upgrade is applied between
// two upgrade steps: each step ends only when the restarted member is alive
// again (rule 10), so a restart and a membership change are never in flight
// together. New members are created on the desired version when its skew is
// allowed, otherwise on the highest version running, so a refused upgrade
// never blocks repairs.
package planner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Requeue hints for Wait actions.
const (
	requeueShort = 2 * time.Second
	requeueWait  = 5 * time.Second
	requeueLong  = 30 * time.Second
)

// Plan returns the single next safe action. See the package documentation
// for the rules.
func Plan(d Desired, o Observed) Action {
	d = d.withDefaults()
	if d.Paused {
		return wait(v1beta2.ReasonPaused, "reconciliation is paused (spec.paused); nothing is changed", 0)
	}
	if d.Size < 1 {
		return wait(v1beta2.ReasonInvalidSpec, fmt.Sprintf("size %d: a cluster needs at least one member", d.Size), 0)
	}
	if o.Recovery != nil {
		return planRecovery(d, o)
	}
	if !o.MembersKnown || len(o.Members) == 0 {
		if !o.Bootstrapped && !formedOnce(o) {
			return planBootstrap(d, o)
		}
		return planNoMembers(d, o)
	}
	v := newView(d, o)
	a := v.plan()
	a.ClearPending = v.clearPending
	if a.Kind == Done && v.orphanRequeue > 0 {
		a.RequeueAfter = v.orphanRequeue
	}
	return a
}

func wait(reason, msg string, after time.Duration) Action {
	return Action{Kind: Wait, Reason: reason, Message: msg, RequeueAfter: after}
}

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

// planNoMembers handles a bootstrapped cluster of which no endpoint answered.
func planNoMembers(d Desired, o Observed) Action {
	if a, ok := planRecreateKnown(d, o); ok {
		return a
	}
	if len(o.Pods) == 0 {
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonAllMembersLost,
			Message: "the cluster was formed but no member pod exists and no endpoint answers; restore from a backup"}
	}
	var lastDown time.Time
	for i := range o.Pods {
		p := &o.Pods[i]
		if p.Ready && !p.gone() {
			return wait(v1beta2.ReasonMembersUnknown, "no etcd endpoint answered MemberList; waiting", requeueWait)
		}
		since := p.UnhealthySince
		if since.IsZero() {
			since = o.Now
		}
		if since.After(lastDown) {
			lastDown = since
		}
	}
	if elapsed := o.Now.Sub(lastDown); elapsed < d.QuorumLossGrace {
		return wait(v1beta2.ReasonMembersUnknown, "no etcd endpoint answers and no member pod is ready", remaining(d.QuorumLossGrace, elapsed))
	}
	return Action{Kind: QuorumLost, Reason: v1beta2.ReasonNoEndpoint,
		Message: fmt.Sprintf("no etcd endpoint has answered and no member pod has been ready for %s; no survivor can be identified", d.QuorumLossGrace)}
}

// planRecreateKnown is rule 3b without a member list: the recorded members with a
// claim and no pod get their pods back, one per plan, so that a cluster whose pods all
// went (a drain, an eviction wave) restarts on its data.
func planRecreateKnown(d Desired, o Observed) (Action, bool) {
	pods := map[string]bool{}
	for i := range o.Pods {
		pods[o.Pods[i].Name] = true
	}
	claims := map[string]bool{}
	for _, c := range o.Claims {
		claims[c] = true
	}
	known := append([]string(nil), o.KnownMembers...)
	sort.Strings(known)
	ver, err := ParseVersion(d.Version)
	if err != nil {
		return Action{}, false
	}
	for _, n := range known {
		if claims[n] && !pods[n] {
			return Action{Kind: CreatePod, Name: n, Version: ver.String(), Reason: v1beta2.ReasonRecreatingPod,
				Message: fmt.Sprintf("no member answers; member %s has no pod but its claim holds its data; recreating the pod", n)}, true
		}
	}
	return Action{}, false
}

func remaining(grace, elapsed time.Duration) time.Duration {
	r := grace - elapsed
	if r < time.Second {
		r = time.Second
	}
	return r
}

// view is Observed indexed for planning. It holds copies: Plan never
// modifies its input.
type view struct {
	d Desired
	o Observed

	members []*Member // sorted by ID
	byID    map[uint64]*Member
	podOf   map[uint64]*Pod
	orphans []*Pod // unmatched pods, excluding the pending pod
	voters  []*Member
	leader  *Member // a voter, or nil

	pending       *PendingMember
	clearPending  bool
	orphanRequeue time.Duration // when the youngest orphan pod may be deleted

	reachableVoters, aliveVoters int
}

func newView(d Desired, o Observed) *view {
	v := &view{d: d, o: o, byID: map[uint64]*Member{}, podOf: map[uint64]*Pod{}}
	for i := range o.Members {
		m := o.Members[i]
		v.members = append(v.members, &m)
	}
	sort.Slice(v.members, func(i, j int) bool { return v.members[i].ID < v.members[j].ID })
	for _, m := range v.members {
		v.byID[m.ID] = m
	}
	v.pending = crediblePending(d, o)

	pods := make([]*Pod, len(o.Pods))
	for i := range o.Pods {
		p := o.Pods[i]
		pods[i] = &p
	}
	isPendingPod := func(p *Pod) bool { return v.pending != nil && v.pending.Name != "" && p.Name == v.pending.Name }
	// Deterministic matching regardless of input order; the pod named after
	// the pending member is matched before other pods carrying its ID.
	sort.SliceStable(pods, func(i, j int) bool {
		if pi, pj := isPendingPod(pods[i]), isPendingPod(pods[j]); pi != pj {
			return pi
		}
		if pods[i].Name != pods[j].Name {
			return pods[i].Name < pods[j].Name
		}
		return pods[i].MemberID < pods[j].MemberID
	})
	// A started member owns the pod with its name (and, if annotated, its
	// ID). A member that has not started has no name yet: it owns the pod
	// annotated with its ID, or the pod named after the pending record.
	match := func(p *Pod) *Member {
		if p.MemberID != 0 {
			if m := v.byID[p.MemberID]; m != nil && (m.Name == p.Name || m.Name == "") {
				return m
			}
			return nil
		}
		for _, m := range v.members {
			if m.Name != "" && m.Name == p.Name {
				return m
			}
		}
		if isPendingPod(p) {
			if m := v.byID[v.pending.ID]; m != nil && m.Name == "" {
				return m
			}
		}
		return nil
	}
	for _, p := range pods {
		m := match(p)
		if m != nil && v.podOf[m.ID] == nil {
			v.podOf[m.ID] = p
			continue
		}
		if !isPendingPod(p) {
			v.orphans = append(v.orphans, p)
		}
	}

	for _, m := range v.members {
		if m.IsLearner {
			continue
		}
		v.voters = append(v.voters, m)
		if m.Reachable {
			v.reachableVoters++
		}
		if v.alive(m) {
			v.aliveVoters++
		}
		if m.ID == o.LeaderID && o.LeaderID != 0 {
			v.leader = m
		}
	}

	if o.Pending != nil && v.pending == nil {
		v.clearPending = true // not a record the controller could have made
	}
	if v.pending != nil {
		m := v.byID[v.pending.ID]
		switch {
		case m != nil && !m.IsLearner && m.Name != "":
			v.clearPending = true // promoted and started: the step is done
		case m == nil && o.Now.Sub(v.pending.AddedAt) >= d.ReplaceGoneAfter:
			v.clearPending = true // never added, or removed
		}
	}
	return v
}

// crediblePending is the recorded pending member as far as etcd and the pods bear it
// out, or nil. The record names a member the controller added: a name of this
// cluster's naming, not another member's, for an ID etcd lists as a learner or not yet
// started (or does not list yet). Its age is counted from no earlier than its pod's
// creation, which the controller does right after the record: an older date in the
// record cannot make a learner look stuck.
func crediblePending(d Desired, o Observed) *PendingMember {
	if o.Pending == nil || !IsMemberName(d.ClusterName, o.Pending.Name) {
		return nil
	}
	p := *o.Pending
	for _, m := range o.Members {
		if m.ID == p.ID && !m.IsLearner && m.Name != "" && m.Name != p.Name {
			return nil
		}
		if m.ID != p.ID && m.Name == p.Name {
			return nil
		}
	}
	for i := range o.Pods {
		if o.Pods[i].Name == p.Name && o.Pods[i].CreatedAt.After(p.AddedAt) {
			p.AddedAt = o.Pods[i].CreatedAt
		}
	}
	return &p
}

// healthyForChange: an alive quorum of voters and an alive leader, the
// precondition of every membership change.
func (v *view) healthyForChange() bool {
	return v.aliveVoters >= Quorum(len(v.voters)) && v.leader != nil && v.alive(v.leader)
}

func (v *view) alive(m *Member) bool {
	p := v.podOf[m.ID]
	return m.Reachable && m.Name != "" && p != nil && !p.gone()
}

// downSince is when m stopped being alive, as far as the record shows.
func (v *view) downSince(m *Member) time.Time {
	var since time.Time
	p := v.podOf[m.ID]
	for _, t := range []time.Time{m.UnhealthySince, podUnhealthySince(p)} {
		if !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	if since.IsZero() || since.After(v.o.Now) {
		since = v.o.Now
	}
	if p != nil && p.CreatedAt.After(since) {
		since = p.CreatedAt
	}
	return since
}

func podUnhealthySince(p *Pod) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UnhealthySince
}

// grace is how long m may be down before it is replaced.
func (v *view) grace(m *Member) time.Duration {
	p := v.podOf[m.ID]
	if (p == nil || p.gone()) && !v.hasClaim(m.Name) {
		return v.d.ReplaceGoneAfter
	}
	// A member whose data is on a claim gets its pod back once the old one is gone
	// (rule 3b); only if that does not happen (a pod stuck terminating on a lost node,
	// a claim that cannot be attached) is it replaced, after the long grace.
	return v.d.ReplaceUnhealthyAfter
}

// downFor returns how long m has been down and whether that exceeds its grace.
func (v *view) downFor(m *Member) (time.Duration, bool) {
	el := v.o.Now.Sub(v.downSince(m))
	return el, el >= v.grace(m)
}

func (v *view) dead(m *Member) bool {
	if v.alive(m) {
		return false
	}
	_, over := v.downFor(m)
	return over
}

// removalSafe: after removing m, the alive voters still form a quorum of the
// remaining voters, and at least one voter remains.
func (v *view) removalSafe(m *Member) bool {
	votersAfter, aliveAfter := len(v.voters), v.aliveVoters
	if !m.IsLearner {
		votersAfter--
		if v.alive(m) {
			aliveAfter--
		}
	}
	return votersAfter >= 1 && aliveAfter >= Quorum(votersAfter)
}

func (v *view) plan() Action {
	if len(v.voters) == 0 {
		// etcd never lists only learners; refuse to reason about it.
		return wait(v1beta2.ReasonNoVoters, "the member list has no voting member", requeueWait)
	}
	// Before the quorum rules: putting back the pod of a member with its data needs no
	// quorum (it changes no membership), and may be what brings quorum back.
	if a, ok := v.planRecreate(); ok {
		return a
	}
	if v.reachableVoters < Quorum(len(v.voters)) || v.leader == nil || !v.leader.Reachable {
		return v.planNoQuorum()
	}
	if a, ok := v.planOrphan(); ok {
		return a
	}
	if a, ok := v.planInFlight(); ok {
		return a
	}
	if !v.healthyForChange() {
		return wait(v1beta2.ReasonDegraded, fmt.Sprintf("%d of %d voting members alive (reachable with a running pod); waiting before any change", v.aliveVoters, len(v.voters)), requeueShort)
	}
	if a, ok := v.planDead(); ok {
		return a
	}
	if len(v.voters) > v.d.Size {
		return v.planScaleDown()
	}
	if a, ok := v.planWaitUnhealthy(); ok {
		return a
	}
	if len(v.voters) < v.d.Size {
		name := NewMemberNames(v.d.ClusterName, v.o.nameSeed(), 1, v.usedNames())[0]
		return Action{Kind: AddLearner, Name: name, Version: v.newMemberVersion(), Reason: v1beta2.ReasonScalingUp,
			Message: fmt.Sprintf("adding learner %s (%d of %d voting members)", name, len(v.voters), v.d.Size)}
	}
	return v.planUpgrade()
}

func (v *view) planNoQuorum() Action {
	n, q := len(v.voters), Quorum(len(v.voters))
	if v.reachableVoters >= q {
		return wait(v1beta2.ReasonNoLeader, "a quorum is reachable but no leader is known; waiting for the election", requeueShort)
	}
	if v.leader != nil && v.leader.Reachable {
		return wait(v1beta2.ReasonPartialVisibility, fmt.Sprintf("only %d of %d voting members answer, but leader %x does: the cluster has quorum beyond our view; waiting", v.reachableVoters, n, v.leader.ID), requeueWait)
	}
	// Quorum was lost when the (n-q+1)-th voter went down.
	var downs []time.Time
	for _, m := range v.voters {
		if !m.Reachable {
			t := m.UnhealthySince
			if t.IsZero() || t.After(v.o.Now) {
				t = v.o.Now
			}
			downs = append(downs, t)
		}
	}
	sort.Slice(downs, func(i, j int) bool { return downs[i].Before(downs[j]) })
	lostSince := downs[n-q] // len(downs) = n - reachable >= n-q+1
	msg := fmt.Sprintf("%d of %d voting members reachable, %d needed", v.reachableVoters, n, q)
	if el := v.o.Now.Sub(lostSince); el < v.d.QuorumLossGrace {
		return wait(v1beta2.ReasonQuorumUnavailable, msg+"; waiting for members to return", remaining(v.d.QuorumLossGrace, el))
	}
	if !v.d.QuorumLossRecovery {
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonQuorumLost, RequeueAfter: requeueLong,
			Message: msg + fmt.Sprintf(" for over %s; nothing is changed (enable quorum-loss recovery to force a new cluster from the most up-to-date survivor, or restore from a backup)", v.d.QuorumLossGrace)}
	}
	// Only voters: every committed entry is on a majority of voters, so the
	// surviving voter with the most data has everything that survived. A
	// learner is not part of that majority and may lag arbitrarily.
	var best *Member
	for _, m := range v.voters {
		if !v.alive(m) {
			continue
		}
		if best == nil || betterSurvivor(m, best) {
			best = m
		}
	}
	if best == nil {
		return Action{Kind: QuorumLost, Reason: v1beta2.ReasonNoSurvivor, RequeueAfter: requeueLong,
			Message: msg + "; no reachable member with a running pod to recover from"}
	}
	name := NewMemberNames(v.d.ClusterName, v.o.nameSeed(), 1, v.usedNames())[0]
	return Action{Kind: ForceNewCluster, From: best.ID, ID: best.ID, Name: best.Name, Revision: best.Revision,
		Members: []NewMember{{Name: name}}, Version: v.runningVersion(best), Reason: v1beta2.ReasonQuorumLossRecovery,
		Message: msg + fmt.Sprintf(" for over %s; seeding a new cluster (member %s) from %s at revision %d", v.d.QuorumLossGrace, name, best.Name, best.Revision)}
}

// planRecreate gives a started voter whose pod is missing (not merely failing) its pod
// back when its data claim exists (rule 3b).
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
		return Action{Kind: CreatePod, Name: m.Name, ID: m.ID, Version: v.newMemberVersion(), Reason: v1beta2.ReasonRecreatingPod,
			Message: fmt.Sprintf("member %s (%x) has no pod but its claim holds its data; recreating the pod", m.Name, m.ID)}, true
	}
	return Action{}, false
}

func (v *view) hasClaim(name string) bool {
	for _, c := range v.o.Claims {
		if c == name {
			return true
		}
	}
	return false
}

// planRecovery continues a recorded quorum-loss recovery (rule 2a). The old
// members' pods are left alone until the new member serves at least the
// recorded revision, so every outcome short of success leaves them as they were.
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
	if o.MembersKnown && len(o.Members) == 1 {
		m := o.Members[0]
		if m.Name == r.Member && m.Reachable && o.LeaderID == m.ID && m.Revision >= r.Revision {
			return Action{Kind: FinishRecovery, Name: r.Member, ID: m.ID, Reason: v1beta2.ReasonRecovered,
				Message: fmt.Sprintf("member %s serves the data of %s (revision %d >= %d); removing the old members' pods", r.Member, r.Source, m.Revision, r.Revision)}
		}
	}
	abort := func(why string) Action {
		return Action{Kind: AbortRecovery, Name: r.Member, Reason: v1beta2.ReasonRecoveryAborted, DeletePod: newPod != nil && !newPod.Deleting,
			Message: fmt.Sprintf("recovery from %s into %s abandoned: %s; the old members were not touched", r.Source, r.Member, why)}
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

// recoveryRecordInvalid says why a recorded recovery is not one the controller is
// carrying out, or "" if it is. Once its pod exists, the pod proves it: the controller
// marks the new member's pod with the recovery's token and removes the mark when the
// recovery finishes. Before, the old cluster must still call for exactly this
// recovery: quorum lost past its grace, the opt-in given, the source an alive voter.
func recoveryRecordInvalid(d Desired, o Observed, newPod *Pod) string {
	r := o.Recovery
	if newPod != nil {
		if newPod.RecoveryToken == "" || newPod.RecoveryToken != r.Token {
			return fmt.Sprintf("pod %s is not that recovery's new member", r.Member)
		}
		return ""
	}
	if !IsMemberName(d.ClusterName, r.Member) {
		return fmt.Sprintf("%q is not a member name of this cluster", r.Member)
	}
	fresh := o
	fresh.Recovery = nil
	if a := Plan(d, fresh); a.Kind != ForceNewCluster {
		return "the cluster does not call for a recovery: " + a.Reason
	}
	v := newView(d, fresh)
	if m := v.byID[r.SourceID]; m == nil || m.IsLearner || m.Name != r.Source || !v.alive(m) {
		return fmt.Sprintf("%s (%x) is not an alive voting member", r.Source, r.SourceID)
	}
	return ""
}

// betterSurvivor orders recovery candidates: most data first, then the
// longer raft log, then the lowest ID for determinism.
func betterSurvivor(a, b *Member) bool {
	if a.Revision != b.Revision {
		return a.Revision > b.Revision
	}
	if a.RaftIndex != b.RaftIndex {
		return a.RaftIndex > b.RaftIndex
	}
	return a.ID < b.ID
}

func (v *view) planOrphan() (Action, bool) {
	if !v.o.Bootstrapped {
		return Action{}, false
	}
	for _, p := range v.orphans {
		if p.Deleting {
			continue
		}
		// A second pod carrying the ID of a member that has not started yet
		// is ambiguous (which one will start?); once the member publishes
		// its name the wrong one no longer matches and is removed then.
		if m := v.byID[p.MemberID]; m != nil && m.Name == "" {
			continue
		}
		// Young orphans are left for a later plan: a list read from a
		// lagging member may not show a member added a moment ago.
		if age := v.o.Now.Sub(p.CreatedAt); age < v.d.ReplaceGoneAfter {
			if r := remaining(v.d.ReplaceGoneAfter, age); v.orphanRequeue == 0 || r < v.orphanRequeue {
				v.orphanRequeue = r
			}
			continue
		}
		// One list is one member's word, and that member may lag or lie. The pod
		// goes only when a majority of the voters, each asked alone, lists no
		// member for it; until then it is left for a later plan.
		absent, q := v.listsWithout(p), Quorum(len(v.voters))
		if absent < q {
			if v.orphanRequeue == 0 || requeueWait < v.orphanRequeue {
				v.orphanRequeue = requeueWait
			}
			continue
		}
		return Action{Kind: DeletePod, Name: p.Name, ID: p.MemberID, Reason: v1beta2.ReasonOrphanPod,
			Message: fmt.Sprintf("pod %s has no etcd member (agreed by the own member lists of %d of %d voting members)", p.Name, absent, len(v.voters))}, true
	}
	return Action{}, false
}

// listsWithout counts the voters whose own member list has no member the pod
// belongs to. A list from anyone but a voter of the main list does not count,
// nor does a second list from the same voter.
func (v *view) listsWithout(p *Pod) int {
	counted := map[uint64]bool{}
	n := 0
	for _, l := range v.o.MemberLists {
		m := v.byID[l.From]
		if m == nil || m.IsLearner || counted[l.From] {
			continue
		}
		counted[l.From] = true
		if !listsPod(l.Members, p) {
			n++
		}
	}
	return n
}

// listsPod reports whether a member list has a member that pod p belongs to, by
// the rule newView matches pods with: the annotated ID (with the pod's name, or
// no name yet), else the name.
func listsPod(ms []Member, p *Pod) bool {
	for _, m := range ms {
		if p.MemberID != 0 {
			if m.ID == p.MemberID && (m.Name == p.Name || m.Name == "") {
				return true
			}
			continue
		}
		if m.Name != "" && m.Name == p.Name {
			return true
		}
	}
	return false
}

func (v *view) planInFlight() (Action, bool) {
	var inflight []*Member
	for _, m := range v.members {
		if m.IsLearner || m.Name == "" {
			inflight = append(inflight, m)
		}
	}
	if len(inflight) == 0 {
		return Action{}, false
	}
	// The recorded step first; anything else (e.g. added by hand) after it.
	sort.SliceStable(inflight, func(i, j int) bool {
		return v.isPending(inflight[i]) && !v.isPending(inflight[j])
	})
	m := inflight[0]
	pod := v.podOf[m.ID]
	name := m.Name
	if name == "" && v.isPending(m) {
		name = v.pending.Name
	}
	if name == "" && pod != nil {
		name = pod.Name
	}
	started := m.Name != ""
	kind := "learner"
	if !m.IsLearner {
		kind = "member"
	}
	abandon := func(reason, msg string) (Action, bool) {
		if !v.healthyForChange() {
			return wait(v1beta2.ReasonDegraded, fmt.Sprintf("not removing %s %x while the voting members are degraded", kind, m.ID), requeueShort), true
		}
		if !v.removalSafe(m) {
			return wait(v1beta2.ReasonRemovalWouldLoseQuorum, fmt.Sprintf("not removing %s %x: %s", kind, m.ID, msg), requeueShort), true
		}
		return Action{Kind: RemoveMember, ID: m.ID, Name: name, DeletePod: pod != nil, Reason: reason,
			Message: fmt.Sprintf("removing %s %s (%x): %s", kind, name, m.ID, msg)}, true
	}

	// Dead voters are about to be replaced, so they do not count here: a
	// learner that was in flight when a voter died still fills the gap.
	if live := len(v.voters) - v.deadVoters(); m.IsLearner && live >= v.d.Size {
		return abandon(v1beta2.ReasonLearnerNotNeeded, fmt.Sprintf("already %d live voting members for size %d", live, v.d.Size))
	}
	if v.isPending(m) {
		if age := v.o.Now.Sub(v.pending.AddedAt); age >= v.d.LearnerTimeout {
			return abandon(v1beta2.ReasonLearnerStuck, fmt.Sprintf("not promoted %s after it was added", age.Round(time.Second)))
		}
	}
	el, over := v.downFor(m)
	switch {
	case pod != nil && pod.gone():
		if over {
			return abandon(v1beta2.ReasonLearnerPodGone, "its pod is gone")
		}
		return wait(v1beta2.ReasonMemberPodGone, fmt.Sprintf("pod %s of %s %x is gone", pod.Name, kind, m.ID), remaining(v.grace(m), el)), true
	case pod == nil && !started && name != "" && !v.podNameTaken(name):
		return Action{Kind: CreatePod, Name: name, ID: m.ID, Version: v.newMemberVersion(), Reason: v1beta2.ReasonStartingMember,
			Message: fmt.Sprintf("creating pod for %s %s (%x) to join the cluster", kind, name, m.ID)}, true
	case pod == nil:
		if over {
			return abandon(v1beta2.ReasonMemberWithoutPod, "it has no pod and none can be created for it")
		}
		return wait(v1beta2.ReasonMemberWithoutPod, fmt.Sprintf("%s %x has no pod", kind, m.ID), remaining(v.grace(m), el)), true
	case !started || !m.Reachable:
		if over {
			return abandon(v1beta2.ReasonMemberNotStarting, fmt.Sprintf("its pod has not served for %s", el.Round(time.Second)))
		}
		return wait(v1beta2.ReasonMemberStarting, fmt.Sprintf("waiting for %s %s (%x) to start", kind, name, m.ID), requeueShort), true
	}
	// Started, reachable learner.
	if !v.healthyForChange() {
		return wait(v1beta2.ReasonDegraded, "not promoting while the voting members are degraded", requeueShort), true
	}
	if !caughtUp(m.RaftIndex, v.leader.RaftIndex, v.d.PromoteMaxLag) {
		return wait(v1beta2.ReasonLearnerCatchingUp, fmt.Sprintf("learner %s at raft index %d, leader at %d", name, m.RaftIndex, v.leader.RaftIndex), requeueWait), true
	}
	return Action{Kind: PromoteLearner, ID: m.ID, Name: name, Reason: v1beta2.ReasonPromotingLearner,
		Message: fmt.Sprintf("promoting caught-up learner %s (%x)", name, m.ID)}, true
}

// caughtUp: within maxLag entries of the leader and at least 90% of its
// index (etcd refuses a promotion below 90%: "learner not ready").
func caughtUp(learner, leader, maxLag uint64) bool {
	if learner >= leader {
		return true
	}
	return leader-learner <= maxLag && learner >= leader-leader/10
}

func (v *view) podNameTaken(name string) bool {
	for i := range v.o.Pods {
		if v.o.Pods[i].Name == name {
			return true
		}
	}
	return false
}

func (v *view) isPending(m *Member) bool {
	return v.pending != nil && v.pending.ID == m.ID
}

func (v *view) deadVoters() int {
	n := 0
	for _, m := range v.voters {
		if v.dead(m) {
			n++
		}
	}
	return n
}

func (v *view) planDead() (Action, bool) {
	var dead []*Member
	for _, m := range v.voters {
		if v.dead(m) {
			dead = append(dead, m)
		}
	}
	if len(dead) == 0 {
		return Action{}, false
	}
	sort.SliceStable(dead, func(i, j int) bool { return v.downSince(dead[i]).Before(v.downSince(dead[j])) })
	for _, m := range dead {
		if !v.removalSafe(m) {
			continue
		}
		pod := v.podOf[m.ID]
		why := "its pod is missing"
		if pod != nil {
			why = "its pod is " + podTrouble(pod)
		}
		el, _ := v.downFor(m)
		return Action{Kind: ReplaceMember, ID: m.ID, Name: m.Name, DeletePod: pod != nil, Reason: v1beta2.ReasonReplacingDeadMember,
			Message: fmt.Sprintf("member %s (%x) unreachable for %s and %s; removing it so a new member can take its place", m.Name, m.ID, el.Round(time.Second), why)}, true
	}
	return wait(v1beta2.ReasonRemovalWouldLoseQuorum, "dead members cannot be removed without losing quorum", requeueShort), true
}

func podTrouble(p *Pod) string {
	switch {
	case p.Deleting:
		return "being deleted"
	case p.Phase == PodFailed || p.Phase == PodSucceeded:
		return "terminated (" + string(p.Phase) + ")"
	case p.NodeNotReady:
		return "on a node that is not ready"
	case p.CrashLooping:
		return "crash-looping"
	case p.Terminated:
		return "not running"
	case p.Phase != PodRunning:
		return "in phase " + string(p.Phase)
	case !p.Ready:
		return "running but not ready"
	}
	return "running but its member does not answer"
}

func (v *view) planScaleDown() Action {
	cands := append([]*Member(nil), v.voters...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		aa, ba := v.alive(a), v.alive(b)
		if aa != ba {
			return !aa
		}
		if !aa {
			return v.downSince(a).Before(v.downSince(b))
		}
		ca, cb := v.podOf[a.ID].CreatedAt, v.podOf[b.ID].CreatedAt
		if !ca.Equal(cb) {
			return ca.After(cb)
		}
		return a.Name > b.Name
	})
	m := cands[0]
	if m == v.leader {
		next := map[uint64]bool{}
		for _, c := range cands[:len(v.voters)-v.d.Size] {
			next[c.ID] = true
		}
		to := v.leaderTarget(m, nil, next)
		if to == nil {
			return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before removing the leader", requeueShort)
		}
		return Action{Kind: MoveLeader, From: m.ID, To: to.ID, Reason: v1beta2.ReasonScalingDown,
			Message: fmt.Sprintf("moving leadership from %s to %s before removing %s", m.Name, to.Name, m.Name)}
	}
	if !v.removalSafe(m) {
		return wait(v1beta2.ReasonRemovalWouldLoseQuorum, fmt.Sprintf("removing %s would leave fewer alive voters than the quorum of %d", m.Name, len(v.voters)-1), requeueShort)
	}
	return Action{Kind: RemoveMember, ID: m.ID, Name: m.Name, DeletePod: v.podOf[m.ID] != nil, Reason: v1beta2.ReasonScalingDown,
		Message: fmt.Sprintf("removing %s (%d voting members, size %d)", m.Name, len(v.voters), v.d.Size)}
}

// leaderTarget picks the alive voter to hand leadership to. In order of
// preference: not in avoid (members about to be removed, so leadership does
// not have to move twice), running prefer (if given), the longest raft log,
// the lowest ID.
func (v *view) leaderTarget(from *Member, prefer *Version, avoid map[uint64]bool) *Member {
	runs := func(m *Member) bool {
		if prefer == nil {
			return false
		}
		rv, err := ParseVersion(m.Version)
		return err == nil && rv.Compare(*prefer) == 0
	}
	better := func(a, b *Member) bool {
		if aa, ba := !avoid[a.ID], !avoid[b.ID]; aa != ba {
			return aa
		}
		if ra, rb := runs(a), runs(b); ra != rb {
			return ra
		}
		if a.RaftIndex != b.RaftIndex {
			return a.RaftIndex > b.RaftIndex
		}
		return a.ID < b.ID
	}
	var best *Member
	for _, m := range v.voters {
		if m == from || !v.alive(m) {
			continue
		}
		if best == nil || better(m, best) {
			best = m
		}
	}
	return best
}

func (v *view) planWaitUnhealthy() (Action, bool) {
	var soonest time.Duration
	var names []string
	for _, m := range v.voters {
		if v.alive(m) {
			continue
		}
		el, _ := v.downFor(m)
		r := remaining(v.grace(m), el)
		if soonest == 0 || r < soonest {
			soonest = r
		}
		names = append(names, m.Name)
	}
	if len(names) == 0 {
		return Action{}, false
	}
	return wait(v1beta2.ReasonMemberUnhealthy, "waiting for "+strings.Join(names, ", ")+" to recover (or for its grace to expire)", soonest), true
}

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

// runningVersion is what m runs: its Status answer, else its pod's image.
func (v *view) runningVersion(m *Member) string {
	if m.Version != "" {
		return m.Version
	}
	if p := v.podOf[m.ID]; p != nil {
		return p.Version
	}
	return ""
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

// CheckUpgrade reports whether the cluster may be moved to d.Version: nil
// when every member whose version is known is within the allowed skew.
func CheckUpgrade(d Desired, o Observed) error {
	target, err := ParseVersion(d.Version)
	if err != nil {
		return err
	}
	pods := map[string]*Pod{}
	for i := range o.Pods {
		pods[o.Pods[i].Name] = &o.Pods[i]
	}
	for _, m := range o.Members {
		s := m.Version
		if s == "" && pods[m.Name] != nil {
			s = pods[m.Name].Version
		}
		cur, err := ParseVersion(s)
		if err != nil {
			continue
		}
		if err := CheckSkew(cur, target); err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
	}
	return nil
}

func (v *view) planUpgrade() Action {
	target, err := ParseVersion(v.d.Version)
	if err != nil {
		return Action{Kind: RefuseUpgrade, Reason: v1beta2.ReasonInvalidVersion, Message: err.Error()}
	}
	type state struct {
		m         *Member
		spec, run Version
	}
	var need []state
	for _, m := range v.voters {
		run, rerr := ParseVersion(m.Version)
		var podVersion string
		if p := v.podOf[m.ID]; p != nil {
			podVersion = p.Version
		}
		spec, serr := ParseVersion(podVersion)
		switch {
		case rerr != nil && serr != nil:
			return wait(v1beta2.ReasonVersionUnknown, fmt.Sprintf("cannot tell which version %s runs", m.Name), requeueWait)
		case rerr != nil:
			run = spec
		case serr != nil:
			spec = run
		}
		if err := CheckSkew(run, target); err != nil {
			return Action{Kind: RefuseUpgrade, Reason: v1beta2.ReasonUpgradeRefused, Message: fmt.Sprintf("member %s: %v", m.Name, err)}
		}
		if spec.Compare(target) == 0 && run.Compare(target) != 0 {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf("waiting for %s to run %s", m.Name, target), requeueShort)
		}
		if spec.Compare(target) != 0 {
			need = append(need, state{m, spec, run})
		}
	}
	if len(need) == 0 {
		return Action{Kind: Done, Reason: v1beta2.ReasonReady, Message: fmt.Sprintf("%d members healthy, version %s", len(v.voters), target)}
	}
	// Health gate between two restarts: every voter follows the leader again
	// and its pod is Ready, so the client Service and the PodDisruptionBudget
	// count it again before the next member goes down.
	for _, m := range v.voters {
		if m.LeaderUnknown {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf("waiting for %s to rejoin the leader before the next restart", m.Name), requeueShort)
		}
		if p := v.podOf[m.ID]; p != nil && !p.Ready {
			return wait(v1beta2.ReasonUpgradeInProgress, fmt.Sprintf("waiting for pod %s to be Ready before the next restart", p.Name), requeueShort)
		}
	}
	sort.SliceStable(need, func(i, j int) bool { return need[i].m.Name < need[j].m.Name })
	for _, s := range need {
		if s.m != v.leader {
			return v.upgradeAction(s.m, target)
		}
	}
	// Only the leader is left.
	if len(v.voters) == 1 {
		return v.upgradeAction(v.leader, target)
	}
	to := v.leaderTarget(v.leader, &target, nil)
	if to == nil {
		return wait(v1beta2.ReasonNoLeaderTarget, "no alive voter to move leadership to before upgrading the leader", requeueShort)
	}
	return Action{Kind: MoveLeader, From: v.leader.ID, To: to.ID, Reason: v1beta2.ReasonUpgrading,
		Message: fmt.Sprintf("moving leadership from %s to %s before upgrading %s", v.leader.Name, to.Name, v.leader.Name)}
}

func (v *view) upgradeAction(m *Member, target Version) Action {
	return Action{Kind: UpgradeMember, ID: m.ID, Name: m.Name, Version: target.String(), Reason: v1beta2.ReasonUpgrading,
		Message: fmt.Sprintf("restarting %s on version %s", m.Name, target)}
}
