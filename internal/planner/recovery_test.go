package planner

import (
	"strings"
	"testing"
	"time"
)

// recovering is the observation while a recovery from member 3 of a 3-member cluster
// into "c-new" is recorded and its pod not created yet: members 1 and 2 are dead for
// an hour (quorum lost), and the controller sees the old cluster, every old pod.
func recovering() Observed {
	o := cluster(3)
	crashloop(&o, 1, t0.Add(-time.Hour))
	crashloop(&o, 2, t0.Add(-time.Hour))
	pod(&o, mname(3)).Version = v36
	mem(&o, 3).Version = v36
	o.LeaderID = 0
	o.Recovery = &Recovery{Source: mname(3), SourceID: 3, Revision: 5000, Member: "c-new", StartedAt: t0.Add(-time.Minute), Token: "tok"}
	return o
}

// newPod adds the new member's pod in the given phase, with the recovery's marker;
// from then on the controller dials only it (no member list until it answers).
func newPod(o *Observed, phase PodPhase) *Pod {
	o.Members, o.MembersKnown, o.LeaderID = nil, false, 0
	o.Pods = append(o.Pods, Pod{Name: "c-new", Phase: phase, Version: v36, CreatedAt: o.Now.Add(-30 * time.Second), RecoveryToken: "tok"})
	return &o.Pods[len(o.Pods)-1]
}

// serving makes the new member answer as the leader of its own cluster at revision rev.
func serving(o *Observed, rev int64) {
	o.MembersKnown, o.LeaderID = true, 77
	o.Members = []Member{{ID: 77, Name: "c-new", Reachable: true, Revision: rev, RaftIndex: 10, Version: v36}}
}

func TestPlanRecovery(t *testing.T) {
	optIn := func() Desired { d := desired(3); d.QuorumLossRecovery = true; return d }
	wantNew := func(t *testing.T, a Action) {
		if len(a.Members) != 1 || a.Members[0].Name != "c-new" || a.Revision != 5000 {
			t.Errorf("action %v: want the recorded member c-new and revision 5000", a)
		}
	}
	runCases(t, []tcase{
		{"recorded, no new pod yet: create it on the source's version", optIn, recovering,
			want{kind: ForceNewCluster, from: 3, name: mname(3), version: v36, check: wantNew}},
		{"new pod copying: wait", optIn, func() Observed { o := recovering(); newPod(&o, PodPending); return o },
			want{kind: Wait, reason: "Recovering"}},
		{"new member serves the recorded revision: finish", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			serving(&o, 5000)
			return o
		}, want{kind: FinishRecovery, name: "c-new", id: 77}},
		{"new member behind the recorded revision: never finish", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			serving(&o, 4999)
			return o
		}, want{kind: Wait, reason: "Recovering"}},
		{"new member not its own leader yet: wait", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			serving(&o, 5000)
			o.LeaderID = 0
			return o
		}, want{kind: Wait, reason: "Recovering"}},
		{"a list with other members is not the new cluster: forgotten, nothing deleted", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			serving(&o, 5000)
			o.Members = append(o.Members, Member{ID: 3, Name: mname(3), Reachable: true, Revision: 5000})
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", name: "c-new"}},
		{"source gone before the copy: abort", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodPending)
			pod(&o, mname(3)).Deleting = true
			return o
		}, want{kind: AbortRecovery, name: "c-new"}},
		{"source gone after the copy: keep waiting for the new member", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			dropPod(&o, mname(3))
			return o
		}, want{kind: Wait, reason: "Recovering"}},
		{"new pod failed: abort", optIn, func() Observed { o := recovering(); newPod(&o, PodFailed); return o },
			want{kind: AbortRecovery, name: "c-new"}},
		{"timed out: abort", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			o.Recovery.StartedAt = t0.Add(-DefaultRecoveryTimeout - time.Second)
			return o
		}, want{kind: AbortRecovery}},
		{"opt-in withdrawn before the new member serves: abort", size(3), func() Observed {
			o := recovering()
			newPod(&o, PodPending)
			return o
		}, want{kind: AbortRecovery}},
		{"paused: nothing, even mid-recovery", func() Desired { d := optIn(); d.Paused = true; return d }, recovering,
			want{kind: Wait, reason: "Paused"}},
		// What a tenant can forge or replay (the controller shows a token only when the
		// operator's signature on the pod verifies).
		{"a pod of the member's name without a verified marker: forgotten, nothing deleted", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning).RecoveryToken = ""
			serving(&o, 9000)
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", deletePod: no()}},
		{"a record naming a lagging survivor as the source: forgotten", optIn, func() Observed {
			// Five members, three dead for an hour: 1 and 5 survive, 5 with more data.
			o := cluster(5)
			for _, id := range []uint64{2, 3, 4} {
				crashloop(&o, id, t0.Add(-time.Hour))
			}
			o.LeaderID = 0
			mem(&o, 1).Revision, mem(&o, 5).Revision = 10, 5000
			o.Recovery = &Recovery{Source: mname(1), SourceID: 1, Revision: 10, Member: "c-new", StartedAt: t0.Add(-time.Minute), Token: "tok"}
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", deletePod: no(), check: func(t *testing.T, a Action) {
			if !strings.Contains(a.Message, "not the survivor with the most data") {
				t.Errorf("message %q", a.Message)
			}
		}}},
		{"a replayed record long past its timeout: its pod is left in place", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			o.Recovery.StartedAt = t0.Add(-2*DefaultRecoveryTimeout - time.Second)
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryAborted", deletePod: no()}},
		{"a replayed record whose member is in a regrown cluster: forgotten, nothing deleted", optIn, func() Observed {
			o := recovering()
			newPod(&o, PodRunning)
			serving(&o, 9000)
			o.Members = append(o.Members, Member{ID: 78, Name: "c-grown", Reachable: true, Revision: 9000})
			o.Recovery.StartedAt = t0.Add(-DefaultRecoveryTimeout - time.Second)
			return o
		}, want{kind: AbortRecovery, reason: "RecoveryRecordInvalid", deletePod: no()}},
	})
}

// TestRecoverySequence runs the recovery from the quorum-loss decision to a regrown
// cluster, applying each action as the controller would.
func TestRecoverySequence(t *testing.T) {
	d := desired(3)
	d.QuorumLossRecovery = true
	o := cluster(3)
	crashloop(&o, 1, t0.Add(-time.Hour))
	crashloop(&o, 2, t0.Add(-time.Hour))
	mem(&o, 3).Revision = 6000

	a := Plan(d, o)
	if a.Kind != ForceNewCluster || a.From != 3 || a.Revision != 6000 || len(a.Members) != 1 {
		t.Fatalf("decision: %v", a)
	}
	newName := a.Members[0].Name
	if strings.HasPrefix(newName, "c-m") || newName == "" {
		t.Fatalf("new member name %q reuses an old name", newName)
	}
	// The controller records the recovery, creates the pod, dials only it.
	o.Recovery = &Recovery{Source: a.Name, SourceID: a.From, Revision: a.Revision, Member: newName, StartedAt: o.Now, Token: "tok"}
	o.Members, o.MembersKnown, o.LeaderID = nil, false, 0
	o.Pods = append(o.Pods, Pod{Name: newName, Phase: PodPending, Version: v37, CreatedAt: o.Now, RecoveryToken: "tok"})
	if a := Plan(d, o); a.Kind != Wait {
		t.Fatalf("while copying: %v", a)
	}
	o.Now = o.Now.Add(20 * time.Second)
	pod(&o, newName).Phase, pod(&o, newName).Ready = PodRunning, true
	o.MembersKnown, o.LeaderID = true, 100
	o.Members = []Member{{ID: 100, Name: newName, Reachable: true, Revision: 6000, RaftIndex: 5, Version: v37}}
	a = Plan(d, o)
	if a.Kind != FinishRecovery || a.ID != 100 {
		t.Fatalf("new member serving: %v", a)
	}
	// FinishRecovery deletes the old pods and forgets the recovery.
	o.Recovery = nil
	for i := range o.Pods {
		if o.Pods[i].Name != newName {
			o.Pods[i].Deleting = true
		}
	}
	a = Plan(d, o)
	if a.Kind != AddLearner || a.Name == newName || strings.HasPrefix(a.Name, "c-m") {
		t.Fatalf("after the recovery the cluster regrows with fresh names: %v", a)
	}
}
