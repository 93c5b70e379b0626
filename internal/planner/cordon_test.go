package planner

import (
	"testing"
	"time"
)

// cordoned puts the pods of members ids on the cordoned node n-drained.
func cordoned(o *Observed, ids ...uint64) {
	for _, id := range ids {
		pod(o, mname(id)).Drift.LeaveNode = "n-drained"
	}
}

// onCordonedNode is a healthy n-member cluster led by leader whose members ids run on
// a cordoned node; with claims if claims.
func onCordonedNode(n int, leader uint64, claims bool, ids ...uint64) func() Observed {
	return func() Observed {
		o := cluster(n)
		o.LeaderID = leader
		cordoned(&o, ids...)
		if claims {
			for i := 1; i <= n; i++ {
				withClaims(&o, uint64(i))
			}
		}
		return o
	}
}

// withNewVoter adds the promoted replacement c-new (ID 9) with its Ready pod.
func withNewVoter(o *Observed) {
	o.Members = append(o.Members, Member{ID: 9, Name: "c-new", Reachable: true, RaftIndex: 10000, Version: v37})
	o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 9, Phase: PodRunning, Ready: true, Version: v37, CreatedAt: t0.Add(-time.Minute)})
}

// The rollout rule, members on cordoned nodes: add before remove, one at a time.
func TestPlanLeaveCordonedNode(t *testing.T) {
	runCases(t, []tcase{
		{"one member: a learner is added elsewhere", size(1), onCordonedNode(1, 1, false, 1),
			want{kind: AddLearner, reason: "LeavingCordonedNode", version: v37, check: wantMessage("n-drained")}},
		{"one member: the learner is promoted once caught up", size(1), func() Observed {
			o := onCordonedNode(1, 1, false, 1)()
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: PromoteLearner, id: 9}},
		{"one member: leadership moves to the new member", size(1), func() Observed {
			o := onCordonedNode(1, 1, false, 1)()
			withNewVoter(&o)
			return o
		}, want{kind: MoveLeader, from: 1, to: 9}},
		{"one member: then the member on the cordoned node is removed with its pod", size(1), func() Observed {
			o := onCordonedNode(1, 9, false, 1)()
			withNewVoter(&o)
			return o
		}, want{kind: RemoveMember, id: 1, deletePod: yes()}},
		{"three members: a follower on the cordoned node is replaced through a learner", size(3), onCordonedNode(3, 1, false, 2),
			want{kind: AddLearner, reason: "LeavingCordonedNode", check: wantMessage(mname(2))}},
		{"three members with claims: still a learner, never a pod recreated on its claim", size(3), onCordonedNode(3, 1, true, 2),
			want{kind: AddLearner, reason: "LeavingCordonedNode", check: wantMessage(mname(2))}},
		{"three members: the leader on the cordoned node gets a learner first, no move yet", size(3), onCordonedNode(3, 1, true, 1),
			want{kind: AddLearner, reason: "LeavingCordonedNode", check: wantMessage(mname(1))}},
		{"three members: after the promotion the cordoned member is removed, not another", size(3), func() Observed {
			o := onCordonedNode(3, 1, true, 3)()
			withNewVoter(&o)
			return o
		}, want{kind: RemoveMember, id: 3, deletePod: yes()}},
		{"three members: a cordoned leader hands leadership over before its removal", size(3), func() Observed {
			o := onCordonedNode(3, 1, false, 1)()
			withNewVoter(&o)
			return o
		}, want{kind: MoveLeader, from: 1}},
		{"two members on cordoned nodes: one move at a time (the learner is finished first)", size(3), func() Observed {
			o := onCordonedNode(3, 1, false, 2, 3)()
			withLearner(&o, 9, "c-new", false, false, false, 0)
			return o
		}, want{kind: CreatePod, name: "c-new", id: 9}},
		{"two members on cordoned nodes: nothing while the new member is not Ready", size(3), func() Observed {
			o := onCordonedNode(3, 1, false, 3)()
			pod(&o, mname(2)).Ready = false
			return o
		}, want{kind: Wait, reason: "ReconfigureInProgress"}},
		{"paused: nothing moves", func() Desired { d := desired(3); d.Paused = true; return d }, onCordonedNode(3, 1, false, 2),
			want{kind: Wait, reason: "Paused"}},
		{"no other node: nothing moves and the wait says why", size(1), func() Observed {
			o := onCordonedNode(1, 1, false, 1)()
			o.NoNodeToLeaveTo = true
			return o
		}, want{kind: Wait, reason: "NoNodeToLeaveTo", check: wantMessage("n-drained")}},
		{"no other node: a learner in flight is abandoned, not promoted", size(1), func() Observed {
			o := onCordonedNode(1, 1, false, 1)()
			o.NoNodeToLeaveTo = true
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: RemoveMember, id: 9, reason: "LearnerNotNeeded"}},
		{"no other node: a spec rollout of the other members still proceeds", size(3), func() Observed {
			o := reconfiguring(3, 1, false, 1, 2)()
			cordoned(&o, 2)
			o.NoNodeToLeaveTo = true
			return o
		}, want{kind: AddLearner, reason: "Reconfiguring", check: wantMessage(mname(3))}},
		{"a held field holds the move too (the new pod would take it up)", size(3), func() Observed {
			o := onCordonedNode(3, 1, false, 2)()
			pod(&o, mname(3)).Drift = Drift{Fields: []string{"pod.ClusterDomain"}, Held: []string{"pod.ClusterDomain"}}
			return o
		}, want{kind: Wait, reason: "ReconfigureHeld"}},
		{"scale-up comes first", size(5), onCordonedNode(3, 1, false, 2), want{kind: AddLearner, reason: "ScalingUp"}},
	})
}
