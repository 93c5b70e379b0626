package planner

import (
	"slices"
	"testing"
	"time"
)

// driftNewPod marks the pods of members ids as lacking fields only a new pod gets.
func driftNewPod(o *Observed, ids ...uint64) {
	for _, id := range ids {
		pod(o, mname(id)).Drift = Drift{Fields: []string{"pod.resources"}, NewPod: true}
	}
}

func driftMetadata(o *Observed, ids ...uint64) {
	for _, id := range ids {
		pod(o, mname(id)).Drift = Drift{Fields: []string{"pod.labels"}, Metadata: true}
	}
}

// reconfiguring is a healthy n-member cluster led by leader whose members other than
// done lack a field only a new pod gets; with claims if claims.
func reconfiguring(n int, leader uint64, claims bool, done ...uint64) func() Observed {
	return rollingOut(n, leader, claims, func(o *Observed, id uint64, done bool) {
		if !done {
			driftNewPod(o, id)
		}
	}, done...)
}

// rollingOut is a healthy n-member cluster led by leader, with claims if claims, whose
// member id member sets up: as the spec asks if done (one of done), else not yet.
func rollingOut(n int, leader uint64, claims bool, member func(o *Observed, id uint64, done bool), done ...uint64) func() Observed {
	return func() Observed {
		o := cluster(n)
		o.LeaderID = leader
		for i := 1; i <= n; i++ {
			id := uint64(i)
			member(&o, id, slices.Contains(done, id))
			if claims {
				withClaims(&o, id)
			}
		}
		return o
	}
}

func wantKeepClaim(t *testing.T, a Action) {
	t.Helper()
	if !a.KeepClaim {
		t.Errorf("DeletePod without KeepClaim: %v", a)
	}
}

// The rollout rule: rolling reconfiguration.
func TestPlanReconfigure(t *testing.T) {
	runCases(t, []tcase{
		{"nothing drifted: done", size(3), func() Observed { return cluster(3) }, want{kind: Done}},
		{"claim: a follower's pod is recreated first", size(3), reconfiguring(3, 1, true),
			want{kind: DeletePod, reason: "Reconfiguring", name: mname(2), id: 2, check: wantKeepClaim}},
		{"claim: the next follower after the first is back", size(3), reconfiguring(3, 1, true, 2),
			want{kind: DeletePod, name: mname(3), check: wantKeepClaim}},
		{"claim: leader last, leadership moved to a reconfigured voter", size(3), func() Observed {
			o := reconfiguring(3, 1, true, 2, 3)()
			mem(&o, 3).RaftIndex = 10002
			return o
		}, want{kind: MoveLeader, reason: "Reconfiguring", from: 1, to: 3}},
		{"claim: leadership goes to a reconfigured voter even with a shorter log", size(3), func() Observed {
			o := reconfiguring(3, 1, true, 2)()
			driftNewPod(&o, 1)
			mem(&o, 3).RaftIndex = 10005 // drifted, longer log
			o.LeaderID = 3
			return o
		}, want{kind: DeletePod, name: mname(1), check: wantKeepClaim}},
		{"claim: old leader recreated once it no longer leads", size(3), reconfiguring(3, 2, true, 2, 3),
			want{kind: DeletePod, name: mname(1), check: wantKeepClaim}},
		{"all reconfigured: done", size(3), reconfiguring(3, 1, true, 1, 2, 3), want{kind: Done}},
		{"gate: a recreated member must follow the leader", size(3), func() Observed {
			o := reconfiguring(3, 1, true, 2)()
			mem(&o, 2).LeaderUnknown = true
			return o
		}, want{kind: Wait, reason: "ReconfigureInProgress", check: wantMessage(mname(2))}},
		{"gate: a recreated member's pod must be Ready", size(3), func() Observed {
			o := reconfiguring(3, 1, true, 2)()
			pod(&o, mname(2)).Ready = false
			return o
		}, want{kind: Wait, reason: "ReconfigureInProgress", check: wantMessage(mname(2))}},
		{"gate: a recreated pod that is not back yet is waited for, not replaced", size(3), func() Observed {
			o := reconfiguring(3, 1, true)()
			dropPod(&o, mname(2)) // deleted by the previous step, not recreated yet
			unreachable(&o, 2, t0.Add(-3*time.Second))
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod", name: mname(2), id: 2}},
		{"gate: a recreated pod that is starting is waited for", size(3), func() Observed {
			o := reconfiguring(3, 1, true, 2)()
			unreachable(&o, 2, t0.Add(-3*time.Second))
			pod(&o, mname(2)).CreatedAt = t0.Add(-3 * time.Second)
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"paused: nothing", func() Desired { d := desired(3); d.Paused = true; return d }, reconfiguring(3, 1, true),
			want{kind: Wait, reason: "Paused"}},
		{"upgrade before reconfiguration", size(3), func() Observed {
			o := upgrading(3, 1)()
			driftNewPod(&o, 1, 2, 3)
			withClaims(&o, 1, 2, 3)
			return o
		}, want{kind: UpgradeMember, id: 2}},
		{"refused upgrade does not block reconfiguration", func() Desired { d := desired(3); d.Version = "3.9.0"; return d },
			reconfiguring(3, 1, true), want{kind: DeletePod, name: mname(2), check: wantKeepClaim}},
		{"scale-up before reconfiguration", size(5), reconfiguring(3, 1, true), want{kind: AddLearner, reason: "ScalingUp"}},
		{"metadata only: patched in place, the leader too, no leadership move", size(3), func() Observed {
			o := cluster(3)
			driftMetadata(&o, 1)
			return o
		}, want{kind: PatchPodMetadata, reason: "Reconfiguring", name: mname(1), id: 1}},
		{"metadata patched before any restart", size(3), func() Observed {
			o := reconfiguring(3, 1, true)()
			driftMetadata(&o, 3)
			return o
		}, want{kind: PatchPodMetadata, name: mname(3)}},
		{"metadata with a restart-only field: the pod is recreated (it gets both)", size(3), func() Observed {
			o := reconfiguring(3, 1, true)()
			for _, id := range []uint64{2, 3} {
				pod(&o, mname(id)).Drift.Metadata = true
			}
			return o
		}, want{kind: DeletePod, name: mname(2), check: wantKeepClaim}},
		{"held field: metadata still patched", size(3), func() Observed {
			o := cluster(3)
			driftMetadata(&o, 2)
			pod(&o, mname(3)).Drift = Drift{Fields: []string{"TLS.static.member.peerSecret"}, Held: []string{"TLS.static.member.peerSecret"}}
			return o
		}, want{kind: PatchPodMetadata, name: mname(2)}},
		{"held field: no restart", size(3), func() Observed {
			o := reconfiguring(3, 1, true)()
			pod(&o, mname(3)).Drift.Held = []string{"TLS.static.member.peerSecret"}
			return o
		}, want{kind: Wait, reason: "ReconfigureHeld", check: wantMessage("peerSecret")}},
		{"held field alone: nothing to do", size(3), func() Observed {
			o := cluster(3)
			pod(&o, mname(3)).Drift = Drift{Fields: []string{"pod.ClusterDomain"}, Held: []string{"pod.ClusterDomain"}}
			return o
		}, want{kind: Done}},

		// Without a claim: add before remove.
		{"no claim: a learner is added to replace a follower", size(3), reconfiguring(3, 1, false),
			want{kind: AddLearner, reason: "Reconfiguring", version: v37, check: wantMessage(mname(2))}},
		{"no claim: the replacing learner is started, not abandoned", size(3), func() Observed {
			o := reconfiguring(3, 1, false)()
			withLearner(&o, 9, "c-new", false, false, false, 0)
			return o
		}, want{kind: CreatePod, name: "c-new", id: 9}},
		{"no claim: the caught-up learner is promoted", size(3), func() Observed {
			o := reconfiguring(3, 1, false)()
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: PromoteLearner, id: 9}},
		{"no claim: a learner is abandoned when nothing is drifted any more", size(3), func() Observed {
			o := cluster(3)
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: RemoveMember, id: 9, reason: "LearnerNotNeeded"}},
		{"no claim: a learner is abandoned while a held field blocks the rollout", size(3), func() Observed {
			o := reconfiguring(3, 1, false)()
			pod(&o, mname(3)).Drift.Held = []string{"pod.ClusterDomain"}
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: RemoveMember, id: 9, reason: "LearnerNotNeeded"}},
		{"no claim: after the promotion a drifted follower is removed, not the new member", size(3), func() Observed {
			o := reconfiguring(3, 1, false)()
			o.Members = append(o.Members, Member{ID: 9, Name: "c-new", Reachable: true, RaftIndex: 10000, Version: v37})
			o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 9, Phase: PodRunning, Ready: true, Version: v37, CreatedAt: t0.Add(-time.Minute)})
			return o
		}, want{kind: RemoveMember, id: 2, deletePod: yes(), check: wantMessage("current spec")}},
		{"no claim: a drifted leader gives leadership to a member on the current spec before its removal", size(3), func() Observed {
			o := reconfiguring(3, 1, false, 2, 3)()
			o.Members = append(o.Members, Member{ID: 9, Name: "c-new", Reachable: true, RaftIndex: 10000, Version: v37})
			o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 9, Phase: PodRunning, Ready: true, Version: v37, CreatedAt: t0.Add(-time.Minute)})
			return o
		}, want{kind: MoveLeader, from: 1}},
		{"no claim: the leader is replaced last, without a move first (the learner comes first)", size(3), reconfiguring(3, 1, false, 2, 3),
			want{kind: AddLearner, reason: "Reconfiguring", check: wantMessage(mname(1))}},
		{"one member with a claim: replaced through a learner, a restart would lose quorum", size(1), reconfiguring(1, 1, true),
			want{kind: AddLearner, reason: "Reconfiguring"}},
		{"one member: the replacing learner is promoted", size(1), func() Observed {
			o := reconfiguring(1, 1, false)()
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: PromoteLearner, id: 9}},
		{"one member: leadership moved to the new member before the old one goes", size(1), func() Observed {
			o := reconfiguring(1, 1, false)()
			o.Members = append(o.Members, Member{ID: 9, Name: "c-new", Reachable: true, RaftIndex: 10000, Version: v37})
			o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 9, Phase: PodRunning, Ready: true, Version: v37, CreatedAt: t0.Add(-time.Minute)})
			return o
		}, want{kind: MoveLeader, from: 1, to: 9}},
		{"one member: the old member removed", size(1), func() Observed {
			o := reconfiguring(1, 9, false)()
			o.Members = append(o.Members, Member{ID: 9, Name: "c-new", Reachable: true, RaftIndex: 10000, Version: v37})
			o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 9, Phase: PodRunning, Ready: true, Version: v37, CreatedAt: t0.Add(-time.Minute)})
			return o
		}, want{kind: RemoveMember, id: 1, deletePod: yes()}},
		{"two members with claims: replaced through a learner", size(2), reconfiguring(2, 1, true),
			want{kind: AddLearner, reason: "Reconfiguring", check: wantMessage(mname(2))}},
		{"degraded cluster: repairs first", size(3), func() Observed {
			o := reconfiguring(3, 1, true)()
			crashloop(&o, 3, t0.Add(-time.Hour))
			dropPod(&o, mname(3))
			o.Claims = []string{mname(1), mname(2)}
			return o
		}, want{kind: ReplaceMember, id: 3}},
	})
}
