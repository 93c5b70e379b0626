package planner

import (
	"testing"
	"time"
)

// withClaims records a data claim for each named member.
func withClaims(o *Observed, ids ...uint64) {
	for _, id := range ids {
		o.Claims = append(o.Claims, mname(id))
		o.KnownMembers = append(o.KnownMembers, mname(id))
	}
}

func TestPlanRecreatePodOnClaim(t *testing.T) {
	podMissing := func(ids ...uint64) func() Observed {
		return func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 2, 3)
			for _, id := range ids {
				dropPod(&o, mname(id))
				unreachable(&o, id, t0.Add(-time.Second))
			}
			return o
		}
	}
	runCases(t, []tcase{
		{"pod of a member with a claim is missing: recreate it, same name and ID", size(3), podMissing(2),
			want{kind: CreatePod, reason: "RecreatingPod", name: mname(2), id: 2}},
		{"two pods missing (no quorum): recreate, which brings quorum back", size(3), func() Observed {
			o := podMissing(2, 3)()
			o.LeaderID = 0
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod"}},
		{"missing for long: still recreated, never replaced", size(3), func() Observed {
			o := podMissing(2)()
			mem(&o, 2).UnhealthySince = t0.Add(-time.Hour)
			return o
		}, want{kind: CreatePod, name: mname(2)}},
		{"without a claim a missing pod's member is replaced", size(3), func() Observed {
			o := podMissing(2)()
			o.Claims = []string{mname(1), mname(3)}
			mem(&o, 2).UnhealthySince = t0.Add(-time.Minute)
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"pod still terminating, claim: wait past the short grace", size(3), func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 2, 3)
			unreachable(&o, 2, t0.Add(-30*time.Second))
			pod(&o, mname(2)).Deleting = true
			return o
		}, want{kind: Wait}},
		{"pod stuck terminating for long (lost node), claim: replaced after the long grace", size(3), func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 2, 3)
			unreachable(&o, 2, t0.Add(-DefaultReplaceUnhealthyAfter-time.Second))
			pod(&o, mname(2)).Deleting = true
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"evicted (Failed) pod of a member with a claim: delete the pod only", size(3), func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 2, 3)
			unreachable(&o, 2, t0.Add(-time.Second))
			pod(&o, mname(2)).Phase = PodFailed
			return o
		}, want{kind: DeletePod, reason: "RecreatingPod", name: mname(2), id: 2, check: func(t *testing.T, a Action) {
			if !a.KeepClaim {
				t.Error("the claim must be kept")
			}
		}}},
		{"evicted pod without a claim: replaced once gone for the short grace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 2, t0.Add(-time.Minute))
			pod(&o, mname(2)).Phase = PodFailed
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"no member answers, all pods gone, claims of recorded members: recreate the first", size(3), func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 2, 3)
			o.Members, o.MembersKnown, o.LeaderID, o.Pods = nil, false, 0, nil
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod", name: mname(1)}},
		{"no member answers, a claim of an unrecorded name: not recreated", size(3), func() Observed {
			o := cluster(3)
			o.Claims = []string{"c-stranger"}
			o.Members, o.MembersKnown, o.LeaderID, o.Pods = nil, false, 0, nil
			return o
		}, want{kind: QuorumLost, reason: "AllMembersLost"}},
	})
}
