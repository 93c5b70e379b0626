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
	// agrees, or every answering member when no group is largest, or the pods whose
	// members a list dropped without a quorum confirming it; sorted.
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
	return unconfirmedShrink(o, name)
}

// unconfirmedShrink: member pods exist (not being deleted) that the member list has no
// member for, every voter gave its own list, and fewer than a quorum of the members that list and those pods together
// confirm, each in its own list, that the pods have no member. A forked member (it
// answers 410 Gone to its old peers' raft messages, so they stop themselves) is then the
// only one answering, and its list of one would make every other member's pod look like
// an orphan on its word alone. A membership the operator shrank itself is confirmed by a
// quorum of the old one. Not while a recovery or a restore from backup is recorded: the
// controller then observes only the new cluster, beside every old pod, on purpose (their
// records are judged by the recovery and backup-restore rules on the operator's signed markers).
func unconfirmedShrink(o Observed, name func(uint64) string) *Fork {
	if !o.MembersKnown || len(o.Members) == 0 || o.Recovery != nil || o.BackupRestore != nil {
		return nil
	}
	var unlisted []*Pod
	for i := range o.Pods {
		p := &o.Pods[i]
		if p.Deleting || listsPod(o.Members, p) || (o.Pending != nil && p.Name == o.Pending.Name) {
			continue
		}
		unlisted = append(unlisted, p)
	}
	if len(unlisted) == 0 {
		return nil
	}
	voters := map[uint64]bool{}
	for _, m := range o.Members {
		if !m.IsLearner {
			voters[m.ID] = true
		}
	}
	confirmed, counted := 0, map[uint64]bool{}
	for _, l := range o.MemberLists {
		if !voters[l.From] || counted[l.From] {
			continue
		}
		counted[l.From] = true
		lacks := true
		for _, p := range unlisted {
			if listsPod(l.Members, p) {
				lacks = false
			}
		}
		if lacks {
			confirmed++
		}
	}
	// Only when every voter gave its own list: with lists missing, the orphan rule
	// deletes nothing anyway, and missing answers are no evidence of a fork.
	need := Quorum(len(voters) + len(unlisted))
	if confirmed >= need || len(counted) < len(voters) {
		return nil
	}
	var pods, answering []string
	for _, p := range unlisted {
		pods = append(pods, p.Name)
	}
	for id := range counted {
		answering = append(answering, name(id))
	}
	sort.Strings(pods)
	sort.Strings(answering)
	return &Fork{Members: pods, Detail: fmt.Sprintf("the member list [%s] answered by %s has no member for pods %s, and only %d of the %d members they and the list make confirm it (%d needed)",
		strings.Join(namesOf(memberIDs(o.Members), name), " "), strings.Join(answering, ", "), strings.Join(pods, ", "), confirmed, len(voters)+len(unlisted), need)}
}

func memberIDs(ms []Member) []uint64 {
	var out []uint64
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
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

// planFork is the fork rule: while the answering members disagree on cluster ID or membership,
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
	return wait(v1beta2.ReasonForked, fmt.Sprintf("members %s are not in one cluster with the others (%s): a fork, e.g. a member image that forces a new cluster; "+
		"nothing is removed, replaced, recovered or deleted until every answering member agrees again (fix or roll back the image, then remove the forked member yourself)",
		strings.Join(f.Members, ", "), f.Detail), requeueLong), true
}
