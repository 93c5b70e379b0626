package planner

import (
	"fmt"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planOrphan is the orphan rule: a pod with no matching member that is not the pending member's
// pod → one DeletePod at a time, and only when a majority of the voters, each asked for
// its own member list (Observed.MemberLists), lists no member for the pod: never on one
// member's word, which may be stale or wrong. Never before Bootstrapped; never a pod
// already being deleted; never a pod younger than ReplaceGoneAfter (a list read from a
// lagging member may not yet show a member added a moment ago; Done then carries a
// RequeueAfter); never a second pod annotated with the ID of a member that has not
// started (which one will start is unknowable; once it publishes its name the other no
// longer matches). A removed member's process must not keep running under our labels.
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
