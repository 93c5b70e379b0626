package planner

import (
	"testing"
	"time"
)

// witnessed makes every reachable member answer with its own copy of the current
// member list, as a settled cluster does.
func witnessed(o *Observed) {
	o.MemberLists = nil
	for _, m := range o.Members {
		if m.Reachable {
			o.MemberLists = append(o.MemberLists, MemberList{From: m.ID, Members: append([]Member(nil), o.Members...)})
		}
	}
}

// listedBy makes member from's own list name the member id (a list that lags a
// removal, or a forged one).
func listedBy(o *Observed, from uint64, m Member) {
	for i := range o.MemberLists {
		if o.MemberLists[i].From == from {
			o.MemberLists[i].Members = append(o.MemberLists[i].Members, m)
			return
		}
	}
	panic("no list from that member")
}

func TestPlanOrphanNeedsQuorumOfLists(t *testing.T) {
	// c-old belonged to member 42, which the main list no longer shows.
	withOld := func() Observed {
		o := cluster(3)
		o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
		witnessed(&o)
		return o
	}
	old := Member{ID: 42, Name: "c-old", Reachable: false}
	runCases(t, []tcase{
		{"every member's own list lacks the pod's member: deleted", size(3), withOld,
			want{kind: DeletePod, name: "c-old"}},
		{"a majority's lists lack it, one stale list still has it: deleted", size(3), func() Observed {
			o := withOld()
			listedBy(&o, 3, old)
			return o
		}, want{kind: DeletePod, name: "c-old"}},
		{"one list lacks it, the other members still list it: not deleted", size(3), func() Observed {
			o := withOld()
			listedBy(&o, 2, old)
			listedBy(&o, 3, old)
			return o
		}, want{kind: Done}},
		{"only the list the plan was made from: one member's word is not enough", size(3), func() Observed {
			o := withOld()
			o.MemberLists = o.MemberLists[:1]
			return o
		}, want{kind: Done}},
		{"no member asked for its own list: nothing deleted", size(3), func() Observed {
			o := withOld()
			o.MemberLists = nil
			return o
		}, want{kind: Done}},
		{"a list from a non-member does not count", size(3), func() Observed {
			o := withOld()
			o.MemberLists = append(o.MemberLists[:1], MemberList{From: 77, Members: o.Members}, MemberList{From: 78, Members: o.Members})
			return o
		}, want{kind: Done}},
		{"a learner's list does not count towards the voters' majority", size(5), func() Observed {
			o := withOld()
			withLearner(&o, 99, "c-new", true, true, true, 100)
			o.MemberLists = o.MemberLists[:1]
			o.MemberLists = append(o.MemberLists, MemberList{From: 99, Members: o.Members})
			return o
		}, want{kind: Wait}},
		{"the duplicate of a member's ID under another name is absent from every list: deleted", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-dup", MemberID: 2, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-dup"}},
	})
}
