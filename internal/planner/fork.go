package planner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A fork: members of one cluster's pods that no longer form one cluster. A member image
// may force a new cluster (ETCD_FORCE_NEW_CLUSTER, or flags wrapped around etcd's:
// spec.repository is any image), and a member restarted that way keeps its data, its ID
// and even the cluster ID, but lists only itself and takes writes alone. Every rule below
// reasons about one cluster; fed two, a member the majority still lists but which answers
// for another cluster looks dead, replaceable or orphaned, and the operator would delete
// the fork's pod and claim, with the writes only it acknowledged (or, from the fork's
// side, the majority's). So the planner first checks that every answering member agrees.

// ClusterAnswer is what one member said of the cluster it belongs to when it answered
// Status: the IDs in its response header, and the pod it answered from.
type ClusterAnswer struct {
	Pod       string
	MemberID  uint64
	ClusterID uint64
}

// ForkSettle is how long the answering members may disagree before the planner calls it
// a fork (Wait(Forked), reported as the Forked condition and a warning). A membership
// change reaches each member when it applies it, milliseconds apart, so a serializable
// list asked at that moment may briefly lag; a fork does not go away. Meanwhile it waits
// just the same (Wait(MembershipUnsettled)): nothing is ever decided on a disagreement.
const ForkSettle = 10 * time.Second

// Fork is what the answering members disagree on.
type Fork struct {
	// Members are the members (pod names, else hex IDs) outside the largest group that
	// agrees, or every answering member when no group is largest; sorted.
	Members []string
	// Detail says what they disagree on, for messages.
	Detail string
}

// DetectFork compares what the answering members said: the cluster ID in each Status and
// MemberList answer (Observed.Answers, MemberList.ClusterID) and the set of member IDs in
// each member's own list (Observed.MemberLists). Nil when they all agree (or fewer than
// two answered).
func DetectFork(o Observed) *Fork {
	names := map[uint64]string{}
	for _, m := range o.Members {
		if m.Name != "" {
			names[m.ID] = m.Name
		}
	}
	for _, a := range o.Answers {
		if a.Pod != "" {
			names[a.MemberID] = a.Pod
		}
	}
	name := func(id uint64) string {
		if n := names[id]; n != "" {
			return n
		}
		return fmt.Sprintf("%x", id)
	}

	// Cluster IDs, per answering member; a member that gave two is a group of its own.
	clusterOf := map[uint64]string{}
	add := func(member, cluster uint64) {
		if member == 0 || cluster == 0 {
			return
		}
		k := fmt.Sprintf("%x", cluster)
		if cur, ok := clusterOf[member]; ok && cur != k {
			k = cur + "|" + k
		}
		clusterOf[member] = k
	}
	for _, a := range o.Answers {
		add(a.MemberID, a.ClusterID)
	}
	for _, l := range o.MemberLists {
		add(l.From, l.ClusterID)
	}
	if out, groups := outliers(clusterOf); len(out) > 0 {
		return &Fork{Members: namesOf(out, name), Detail: "cluster IDs differ: " + describe(groups, name, "cluster %s")}
	}

	listOf := map[uint64]string{}
	for _, l := range o.MemberLists {
		if l.From == 0 {
			continue
		}
		var ids []string
		for _, m := range l.Members {
			ids = append(ids, name(m.ID))
		}
		sort.Strings(ids)
		listOf[l.From] = "[" + strings.Join(ids, " ") + "]"
	}
	if out, groups := outliers(listOf); len(out) > 0 {
		return &Fork{Members: namesOf(out, name), Detail: "member lists differ: " + describe(groups, name, "list %s")}
	}
	return nil
}

// outliers groups members by their value: the members outside the one largest group, or
// all of them when two groups are largest; nil when there is one group.
func outliers(valueOf map[uint64]string) ([]uint64, map[string][]uint64) {
	groups := map[string][]uint64{}
	for m, v := range valueOf {
		groups[v] = append(groups[v], m)
	}
	if len(groups) < 2 {
		return nil, groups
	}
	best, tie := "", false
	for v, ms := range groups {
		switch {
		case best == "" || len(ms) > len(groups[best]):
			best, tie = v, false
		case len(ms) == len(groups[best]):
			tie = true
		}
	}
	var out []uint64
	for v, ms := range groups {
		if tie || v != best {
			out = append(out, ms...)
		}
	}
	return out, groups
}

func namesOf(ids []uint64, name func(uint64) string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, name(id))
	}
	sort.Strings(out)
	return out
}

// describe lists each group's value and members, in a stable order.
func describe(groups map[string][]uint64, name func(uint64) string, format string) string {
	var parts []string
	for v, ms := range groups {
		parts = append(parts, fmt.Sprintf(format, v)+" from "+strings.Join(namesOf(ms, name), ", "))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// planFork is rule 1b: while the answering members disagree on cluster ID or membership,
// Wait; nothing is created, removed or deleted. Within ForkSettle of the disagreement
// first being seen (Observed.ForkSince) → Wait(MembershipUnsettled); after →
// Wait(Forked), naming the members outside the largest agreeing group.
func planFork(d Desired, o Observed) (Action, bool) {
	f := DetectFork(o)
	if f == nil {
		return Action{}, false
	}
	since := o.ForkSince
	if since.IsZero() || since.After(o.Now) {
		since = o.Now
	}
	if el := o.Now.Sub(since); el < ForkSettle {
		return wait(v1beta2.ReasonMembershipUnsettled, fmt.Sprintf("the answering members disagree (%s); waiting %s for a membership change to reach all of them",
			f.Detail, remaining(ForkSettle, el).Round(time.Second)), remaining(ForkSettle, el)), true
	}
	return wait(v1beta2.ReasonForked, fmt.Sprintf("member(s) %s answer for another cluster than the others (%s): a fork, e.g. a member image that forces a new cluster; "+
		"nothing is removed, replaced, recovered or deleted until every answering member agrees again (fix or roll back the image, then remove the forked member yourself)",
		strings.Join(f.Members, ", "), f.Detail), requeueLong), true
}
