package planner

import (
	"sort"
	"time"
)

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
