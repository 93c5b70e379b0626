package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
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
		{"spec.version changed, upgrade not started: the pod comes back on the version the others run", func() Desired {
			d := desired(3)
			d.Version = "3.8.0"
			return d
		}, podMissing(2), want{kind: CreatePod, name: mname(2), id: 2, version: v37}},
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

// noMemberAnswers is a cluster of n members on claims none of which answers.
func noMemberAnswers(n int) Observed {
	o := cluster(n)
	withClaims(&o, 1, 2, 3)
	o.Claims = o.Claims[:n]
	o.KnownMembers = o.KnownMembers[:n]
	o.Members, o.MembersKnown, o.LeaderID = nil, false, 0
	for i := range o.Pods {
		o.Pods[i].Ready, o.Pods[i].UnhealthySince = false, t0.Add(-time.Hour)
	}
	return o
}

func TestPlanRecreateWithoutMemberList(t *testing.T) {
	runCases(t, []tcase{
		{"evicted (Failed) pod of a recorded member with a claim: delete the pod only", size(1), func() Observed {
			o := noMemberAnswers(1)
			o.Pods[0].Phase = PodFailed
			return o
		}, want{kind: DeletePod, reason: "RecreatingPod", name: mname(1), check: func(t *testing.T, a Action) {
			if !a.KeepClaim {
				t.Error("the claim must be kept")
			}
		}}},
		{"every pod being deleted on a node that is down, claims: wait for them, never lost", size(3), func() Observed {
			o := noMemberAnswers(3)
			for i := range o.Pods {
				o.Pods[i].Deleting, o.Pods[i].NodeNotReady = true, true
			}
			return o
		}, want{kind: Wait, reason: "RecreatingPod", check: wantMessage("restart on their claims")}},
		{"one pod gone, two being deleted: the gone one first", size(3), func() Observed {
			o := noMemberAnswers(3)
			dropPod(&o, mname(2))
			pod(&o, mname(1)).Deleting = true
			pod(&o, mname(3)).Deleting = true
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod", name: mname(2)}},
		{"a pod being deleted beside a pod that may yet answer: the no-members rule decides", size(3), func() Observed {
			o := noMemberAnswers(3)
			pod(&o, mname(1)).Deleting = true
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"a pod being deleted, its claim not a recorded member's: the no-members rule decides", size(1), func() Observed {
			o := noMemberAnswers(1)
			o.KnownMembers = nil
			o.Pods[0].Deleting = true
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"a Failed pod whose claim is not a recorded member's: not deleted", size(1), func() Observed {
			o := noMemberAnswers(1)
			o.KnownMembers = []string{"c-other"}
			o.Pods[0].Phase = PodFailed
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"all pods gone, claims, restore allowed with a backup: pods back on the claims, nothing restored", restoreAllowed(3), func() Observed {
			o := noMemberAnswers(3)
			o.Pods = nil
			o.Backup = &BackupCandidate{Backup: "b", Path: "bucket/k", Revision: 42}
			o.AllLostSince = t0.Add(-time.Hour)
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod", name: mname(1)}},
	})
}

// TestOutageOnClaimsRestartsFromClaims runs the controller's loop over an outage of
// every member (each node off until its pods are evicted, then on): status is what
// Summarize wrote last, and KnownMembers is read back from it, as the controller does.
// The members must come back on their claims, never be reported lost.
func TestOutageOnClaimsRestartsFromClaims(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			d := size(n)()
			var status []string // status.members, ready and unready
			step := func(what string, o Observed) Action {
				t.Helper()
				o.KnownMembers = status
				a := Plan(d, o)
				checkInvariants(t, d, o, a)
				s := Summarize(d, o, a)
				status = append(append([]string(nil), s.ReadyMembers...), s.UnreadyMembers...)
				t.Logf("%s: %v %s: %s (status members %v)", what, a.Kind, a.Reason, a.Message, status)
				if a.Kind == QuorumLost || s.Phase == v1beta2.ClusterPhaseFailed {
					t.Fatalf("%s: reported lost: %v", what, a)
				}
				return a
			}
			healthy := cluster(n)
			withClaims(&healthy, 1, 2, 3)
			healthy.Claims = healthy.Claims[:n]
			step("healthy", healthy)

			down := noMemberAnswers(n) // nodes off: pods still there, nothing answers
			for i := range down.Pods {
				down.Pods[i].NodeNotReady = true
				down.Pods[i].UnhealthySince = t0
			}
			down.Now = t0.Add(10 * time.Second)
			step("nodes down", down)

			evicted := down // the pods evicted: being deleted while their nodes are down
			evicted.Pods = append([]Pod(nil), down.Pods...)
			for i := range evicted.Pods {
				evicted.Pods[i].Deleting = true
			}
			evicted.Now = t0.Add(10 * time.Minute) // past every grace
			if a := step("pods evicted", evicted); a.Kind != Wait {
				t.Fatalf("pods evicted: %v, want Wait", a)
			}

			back := evicted // the nodes back: the kubelets finish the deletions
			back.Pods = nil
			back.Now = t0.Add(11 * time.Minute)
			created := map[string]bool{}
			for i := 0; i < n; i++ {
				a := step("nodes up", back)
				if a.Kind != CreatePod || a.Reason != "RecreatingPod" || created[a.Name] {
					t.Fatalf("nodes up: %v, want a pod back on the claim of another member", a)
				}
				created[a.Name] = true
				back.Pods = append(back.Pods, Pod{Name: a.Name, Phase: PodPending, CreatedAt: back.Now})
			}
			for i := 1; i <= n; i++ {
				if !created[mname(uint64(i))] {
					t.Errorf("member %s did not get its pod back: %v", mname(uint64(i)), created)
				}
			}
		})
	}
}
