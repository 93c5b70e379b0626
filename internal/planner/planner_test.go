package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const (
	v36 = "3.6.16"
	v37 = "3.7.3"
)

func desired(size int) Desired {
	return Desired{ClusterName: "c", Size: size, Version: v37}
}

func mname(id uint64) string { return fmt.Sprintf("c-m%d", id) }

// cluster is a formed, fully healthy n-member cluster on v37 led by member 1.
func cluster(n int) Observed {
	o := Observed{Now: t0, Bootstrapped: true, MembersKnown: true, LeaderID: 1, NameSeed: "seed"}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		o.Members = append(o.Members, Member{ID: id, Name: mname(id), PeerURLs: []string{"http://" + mname(id) + ":2380"},
			Reachable: true, RaftIndex: 10000, Revision: 5000, Version: v37})
		o.Pods = append(o.Pods, Pod{Name: mname(id), MemberID: id, Phase: PodRunning, Ready: true, Version: v37,
			CreatedAt: t0.Add(-time.Hour - time.Duration(i)*time.Minute)})
	}
	return o
}

func mem(o *Observed, id uint64) *Member {
	for i := range o.Members {
		if o.Members[i].ID == id {
			return &o.Members[i]
		}
	}
	panic(fmt.Sprintf("no member %d", id))
}

func pod(o *Observed, name string) *Pod {
	for i := range o.Pods {
		if o.Pods[i].Name == name {
			return &o.Pods[i]
		}
	}
	panic("no pod " + name)
}

func dropPod(o *Observed, name string) {
	for i := range o.Pods {
		if o.Pods[i].Name == name {
			o.Pods = append(o.Pods[:i], o.Pods[i+1:]...)
			return
		}
	}
	panic("no pod " + name)
}

func dropMember(o *Observed, id uint64) {
	for i := range o.Members {
		if o.Members[i].ID == id {
			o.Members = append(o.Members[:i], o.Members[i+1:]...)
			return
		}
	}
	panic(fmt.Sprintf("no member %d", id))
}

// unreachable marks member id unreachable since t (and its pod unready).
func unreachable(o *Observed, id uint64, since time.Time) {
	m := mem(o, id)
	m.Reachable = false
	m.UnhealthySince = since
	for i := range o.Pods {
		if o.Pods[i].Name == m.Name {
			o.Pods[i].Ready = false
			o.Pods[i].UnhealthySince = since
		}
	}
}

func crashloop(o *Observed, id uint64, since time.Time) {
	unreachable(o, id, since)
	p := pod(o, mname(id))
	p.CrashLooping = true
	p.Terminated = true
}

func withLearner(o *Observed, id uint64, name string, started, reachable, withPod bool, idx uint64) {
	m := Member{ID: id, IsLearner: true, Reachable: reachable, RaftIndex: idx, Version: v37}
	if started {
		m.Name = name
	}
	if !reachable {
		m.UnhealthySince = o.Now
	}
	o.Members = append(o.Members, m)
	if withPod {
		o.Pods = append(o.Pods, Pod{Name: name, MemberID: id, Phase: PodRunning, Ready: reachable, Version: v37, CreatedAt: o.Now.Add(-20 * time.Second)})
	}
	o.Pending = &PendingMember{Name: name, ID: id, AddedAt: o.Now.Add(-30 * time.Second)}
}

type want struct {
	kind         Kind
	reason       string
	id           uint64
	name         string
	from, to     uint64
	deletePod    *bool
	version      string
	clearPending *bool
	check        func(t *testing.T, a Action)
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func (w want) verify(t *testing.T, a Action) {
	t.Helper()
	if a.Kind != w.kind {
		t.Fatalf("kind = %v, want %v (action %v)", a.Kind, w.kind, a)
	}
	if w.reason != "" && a.Reason != w.reason {
		t.Errorf("reason = %q, want %q (action %v)", a.Reason, w.reason, a)
	}
	if w.id != 0 && a.ID != w.id {
		t.Errorf("id = %x, want %x (action %v)", a.ID, w.id, a)
	}
	if w.name != "" && a.Name != w.name {
		t.Errorf("name = %q, want %q (action %v)", a.Name, w.name, a)
	}
	if w.from != 0 && a.From != w.from {
		t.Errorf("from = %x, want %x (action %v)", a.From, w.from, a)
	}
	if w.to != 0 && a.To != w.to {
		t.Errorf("to = %x, want %x (action %v)", a.To, w.to, a)
	}
	if w.deletePod != nil && a.DeletePod != *w.deletePod {
		t.Errorf("deletePod = %v, want %v (action %v)", a.DeletePod, *w.deletePod, a)
	}
	if w.version != "" && a.Version != w.version {
		t.Errorf("version = %q, want %q (action %v)", a.Version, w.version, a)
	}
	if w.clearPending != nil && a.ClearPending != *w.clearPending {
		t.Errorf("clearPending = %v, want %v (action %v)", a.ClearPending, *w.clearPending, a)
	}
	if w.check != nil {
		w.check(t, a)
	}
}

type tcase struct {
	name string
	d    func() Desired
	o    func() Observed
	want want
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			d, o := tc.d(), tc.o()
			a := Plan(d, o)
			tc.want.verify(t, a)
			checkInvariants(t, d, o, a)
		})
	}
}

func size(n int) func() Desired { return func() Desired { return desired(n) } }

func TestPlanBasicsAndBootstrap(t *testing.T) {
	runCases(t, []tcase{
		{"paused healthy cluster", func() Desired { d := desired(3); d.Paused = true; return d },
			func() Observed { return cluster(3) }, want{kind: Wait, reason: "Paused"}},
		{"paused with a dead member and an orphan", func() Desired { d := desired(3); d.Paused = true; return d },
			func() Observed {
				o := cluster(3)
				dropPod(&o, mname(2))
				unreachable(&o, 2, t0.Add(-time.Hour))
				o.Pods = append(o.Pods, Pod{Name: "c-orphan", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
				return o
			}, want{kind: Wait, reason: "Paused"}},
		{"paused before bootstrap", func() Desired { d := desired(3); d.Paused = true; return d },
			func() Observed { return Observed{Now: t0} }, want{kind: Wait, reason: "Paused"}},
		{"paused with quorum lost and recovery opt-in", func() Desired {
			d := desired(3)
			d.Paused, d.QuorumLossRecovery = true, true
			return d
		}, func() Observed {
			o := cluster(3)
			unreachable(&o, 1, t0.Add(-time.Hour))
			unreachable(&o, 2, t0.Add(-time.Hour))
			return o
		}, want{kind: Wait, reason: "Paused"}},
		{"size zero is invalid", size(0), func() Observed { return cluster(3) }, want{kind: Wait, reason: "InvalidSpec"}},
		{"negative size is invalid before bootstrap", size(-1), func() Observed { return Observed{Now: t0} }, want{kind: Wait, reason: "InvalidSpec"}},
		{"bootstrap 3 members at once", size(3), func() Observed { return Observed{Now: t0, NameSeed: "x"} },
			want{kind: Bootstrap, version: v37, check: checkBootstrapNames(3)}},
		{"bootstrap 1 member", size(1), func() Observed { return Observed{Now: t0, NameSeed: "x"} },
			want{kind: Bootstrap, check: checkBootstrapNames(1)}},
		{"bootstrap 7 members", size(7), func() Observed { return Observed{Now: t0, NameSeed: "x"} },
			want{kind: Bootstrap, check: checkBootstrapNames(7)}},
		{"bootstrap even size 4", size(4), func() Observed { return Observed{Now: t0, NameSeed: "x"} },
			want{kind: Bootstrap, check: checkBootstrapNames(4)}},
		{"bootstrap trims v prefix", func() Desired { d := desired(3); d.Version = "v3.7.3"; return d },
			func() Observed { return Observed{Now: t0} }, want{kind: Bootstrap, version: "3.7.3"}},
		{"bootstrap avoids retired names", size(3), func() Observed {
			o := Observed{Now: t0, NameSeed: "x"}
			o.RetiredNames = NewMemberNames("c", o.nameSeed(), 3, nil)
			return o
		}, want{kind: Bootstrap, check: func(t *testing.T, a Action) {
			retired := NewMemberNames("c", Observed{Now: t0, NameSeed: "x"}.nameSeed(), 3, nil)
			for _, m := range a.Members {
				for _, r := range retired {
					if m.Name == r {
						t.Errorf("reused retired name %s", r)
					}
				}
			}
		}}},
		{"bootstrap reuses recorded names when no pod exists yet", size(3), func() Observed {
			return Observed{Now: t0, BootstrapMembers: []string{"c-a", "c-b", "c-c"}}
		}, want{kind: Bootstrap, check: func(t *testing.T, a Action) {
			if got := names(a.Members); got != "c-a,c-b,c-c" {
				t.Errorf("members %s", got)
			}
		}}},
		{"bootstrap completes missing recorded pods", size(3), func() Observed {
			return Observed{Now: t0, BootstrapMembers: []string{"c-a", "c-b", "c-c"},
				Pods: []Pod{{Name: "c-a", Phase: PodRunning, CreatedAt: t0}}}
		}, want{kind: Bootstrap, reason: "CompletingBootstrap", check: func(t *testing.T, a Action) {
			if got := names(a.Members); got != "c-a,c-b,c-c" {
				t.Errorf("members %s (the initial cluster must not change)", got)
			}
		}}},
		{"bootstrap waits once all pods exist", size(3), func() Observed {
			return Observed{Now: t0, BootstrapMembers: []string{"c-a", "c-b", "c-c"},
				Pods: []Pod{{Name: "c-a", Phase: PodRunning}, {Name: "c-b", Phase: PodRunning}, {Name: "c-c", Phase: PodFailed}}}
		}, want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"bootstrap never deletes unrecorded pods", size(3), func() Observed {
			return Observed{Now: t0, Pods: []Pod{{Name: "c-x", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)}}}
		}, want{kind: Wait, reason: "BootstrapUnknown"}},
		{"bootstrap with invalid version", func() Desired { d := desired(3); d.Version = "latest"; return d },
			func() Observed { return Observed{Now: t0} }, want{kind: Wait, reason: "InvalidSpec"}},
		{"bootstrapped cluster with no pods is lost, not re-created", size(3), func() Observed {
			return Observed{Now: t0, Bootstrapped: true}
		}, want{kind: QuorumLost, reason: "AllMembersLost"}},
		{"bootstrapped, no endpoint answers, a pod is ready", size(3), func() Observed {
			o := cluster(3)
			o.MembersKnown, o.Members = false, nil
			return o
		}, want{kind: Wait, reason: "MembersUnknown"}},
		{"bootstrapped, no endpoint answers, all pods down briefly", size(3), func() Observed {
			o := cluster(3)
			o.MembersKnown, o.Members = false, nil
			for i := range o.Pods {
				o.Pods[i].Ready, o.Pods[i].UnhealthySince = false, t0.Add(-time.Minute)
			}
			return o
		}, want{kind: Wait, reason: "MembersUnknown"}},
		{"bootstrapped, no endpoint answers, all pods down for long", size(3), func() Observed {
			o := cluster(3)
			o.MembersKnown, o.Members = false, nil
			for i := range o.Pods {
				o.Pods[i].Ready, o.Pods[i].UnhealthySince = false, t0.Add(-time.Hour)
			}
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"formed but not yet recorded as bootstrapped proceeds", size(3), func() Observed {
			o := cluster(3)
			o.Bootstrapped = false
			return o
		}, want{kind: Done}},
		{"healthy 3 is done", size(3), func() Observed { return cluster(3) }, want{kind: Done}},
		{"healthy 1 is done", size(1), func() Observed { return cluster(1) }, want{kind: Done}},
		{"healthy 7 is done", size(7), func() Observed { return cluster(7) }, want{kind: Done}},
		{"healthy even 4 is done", size(4), func() Observed { return cluster(4) }, want{kind: Done}},
		{"input order does not matter", size(3), func() Observed {
			o := cluster(3)
			o.Members[0], o.Members[2] = o.Members[2], o.Members[0]
			o.Pods[0], o.Pods[1] = o.Pods[1], o.Pods[0]
			return o
		}, want{kind: Done}},
	})
}

func names(ms []NewMember) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Name)
	}
	return strings.Join(s, ",")
}

func checkBootstrapNames(n int) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if len(a.Members) != n {
			t.Fatalf("%d members, want %d", len(a.Members), n)
		}
		seen := map[string]bool{}
		for _, m := range a.Members {
			if !strings.HasPrefix(m.Name, "c-") || len(m.Name) != 2+nameSuffixLen {
				t.Errorf("bad name %q", m.Name)
			}
			if seen[m.Name] {
				t.Errorf("duplicate name %q", m.Name)
			}
			seen[m.Name] = true
		}
	}
}

func TestPlanScaleUp(t *testing.T) {
	runCases(t, []tcase{
		{"scale 3 to 5 adds one learner", size(5), func() Observed { return cluster(3) },
			want{kind: AddLearner, version: v37, check: func(t *testing.T, a Action) {
				if !strings.HasPrefix(a.Name, "c-") || a.Name == mname(1) {
					t.Errorf("bad new name %q", a.Name)
				}
			}}},
		{"scale 1 to 3 adds one learner", size(3), func() Observed { return cluster(1) }, want{kind: AddLearner}},
		{"learner added, no pod yet: create its pod", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", false, false, false, 0)
			return o
		}, want{kind: CreatePod, id: 99, name: "c-new", version: v37}},
		{"learner pod starting (DNS lag): wait", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", false, false, true, 0)
			return o
		}, want{kind: Wait, reason: "MemberStarting"}},
		{"learner started but unreachable briefly: wait", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, true, 0)
			return o
		}, want{kind: Wait, reason: "MemberStarting"}},
		{"learner catching up: wait", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 5000)
			return o
		}, want{kind: Wait, reason: "LearnerCatchingUp"}},
		{"learner caught up: promote", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 9990)
			return o
		}, want{kind: PromoteLearner, id: 99, name: "c-new", clearPending: no()}},
		{"learner ahead of the leader snapshot: promote", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10005)
			return o
		}, want{kind: PromoteLearner, id: 99}},
		{"promoted learner clears pending and next learner is added", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			mem(&o, 99).IsLearner = false
			return o
		}, want{kind: AddLearner, clearPending: yes(), check: func(t *testing.T, a Action) {
			if a.Name == "c-new" {
				t.Error("reused the pending name")
			}
		}}},
		{"learner stuck past timeout is removed with its pod", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10)
			// The controller creates the learner's pod right after recording it.
			o.Pending.AddedAt = t0.Add(-DefaultLearnerTimeout - time.Second)
			pod(&o, "c-new").CreatedAt = o.Pending.AddedAt
			return o
		}, want{kind: RemoveMember, id: 99, name: "c-new", deletePod: yes(), reason: "LearnerStuck"}},
		{"learner never started past timeout is removed", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", false, false, false, 0)
			o.Pending.AddedAt = t0.Add(-DefaultLearnerTimeout)
			return o
		}, want{kind: RemoveMember, id: 99, name: "c-new", deletePod: no(), reason: "LearnerStuck"}},
		{"learner no longer needed after size reduced", size(3), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "LearnerNotNeeded"}},
		{"learner pod failed within gone grace: wait", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, true, 0)
			p := pod(&o, "c-new")
			p.Phase, p.UnhealthySince = PodFailed, t0.Add(-2*time.Second)
			return o
		}, want{kind: Wait, reason: "MemberPodGone"}},
		{"learner pod failed beyond gone grace: remove", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, true, 0)
			p := pod(&o, "c-new")
			p.Phase, p.UnhealthySince = PodFailed, t0.Add(-time.Minute)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "LearnerPodGone", deletePod: yes()}},
		{"started learner whose pod vanished is removed after grace", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, false, false, 0)
			mem(&o, 99).UnhealthySince = t0.Add(-time.Minute)
			return o
		}, want{kind: RemoveMember, id: 99, deletePod: no(), reason: "MemberWithoutPod"}},
		{"unknown unstarted learner without pod: wait within grace", size(5), func() Observed {
			o := cluster(3)
			o.Members = append(o.Members, Member{ID: 77, IsLearner: true, UnhealthySince: t0.Add(-time.Second)})
			return o
		}, want{kind: Wait, reason: "MemberWithoutPod"}},
		{"unknown unstarted learner without pod: removed after grace", size(5), func() Observed {
			o := cluster(3)
			o.Members = append(o.Members, Member{ID: 77, IsLearner: true, UnhealthySince: t0.Add(-time.Minute)})
			return o
		}, want{kind: RemoveMember, id: 77, deletePod: no()}},
		{"unknown unstarted learner with annotated pod waits for it", size(5), func() Observed {
			o := cluster(3)
			o.Members = append(o.Members, Member{ID: 77, IsLearner: true})
			o.Pods = append(o.Pods, Pod{Name: "c-x", MemberID: 77, Phase: PodRunning, CreatedAt: t0.Add(-5 * time.Second)})
			return o
		}, want{kind: Wait, reason: "MemberStarting"}},
		{"learner pod running unready beyond grace is removed", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", false, false, true, 0)
			pod(&o, "c-new").CreatedAt = t0.Add(-3 * time.Minute)
			mem(&o, 99).UnhealthySince = t0.Add(-3 * time.Minute)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "MemberNotStarting"}},
		{"no second learner while one is in flight", size(7), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 100)
			return o
		}, want{kind: Wait, reason: "LearnerCatchingUp"}},
		{"no add while a member is down within grace", size(5), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-10*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy", check: func(t *testing.T, a Action) {
			if want := DefaultReplaceUnhealthyAfter - 10*time.Second; a.RequeueAfter != want {
				t.Errorf("requeue %v, want %v (the grace's end)", a.RequeueAfter, want)
			}
		}}},
		{"pending member vanished: clear after grace", size(5), func() Observed {
			o := cluster(3)
			o.Pending = &PendingMember{Name: "c-new", ID: 99, AddedAt: t0.Add(-time.Minute)}
			return o
		}, want{kind: AddLearner, clearPending: yes(), check: func(t *testing.T, a Action) {
			if a.Name == "c-new" {
				t.Error("reused pending name")
			}
		}}},
		{"pending member not yet listed (lagging list): keep record, pod safe", size(5), func() Observed {
			o := cluster(3)
			o.Pending = &PendingMember{Name: "c-new", ID: 99, AddedAt: t0.Add(-time.Second)}
			o.Pods = append(o.Pods, Pod{Name: "c-new", MemberID: 99, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: AddLearner, clearPending: no()}},
		{"promotion waits while voters are degraded", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			dropPod(&o, mname(3)) // reachable member whose pod vanished is not alive
			dropPod(&o, mname(2))
			return o
		}, want{kind: Wait, reason: "Degraded"}},
	})
}

func TestPlanScaleDown(t *testing.T) {
	runCases(t, []tcase{
		{"scale 5 to 3 removes the newest pod", size(3), func() Observed {
			o := cluster(5)
			pod(&o, mname(4)).CreatedAt = t0.Add(-time.Minute) // newest
			return o
		}, want{kind: RemoveMember, id: 4, name: mname(4), deletePod: yes(), reason: "ScalingDown"}},
		{"scale down ties broken by highest name", size(2), func() Observed {
			o := cluster(3)
			for i := range o.Pods {
				o.Pods[i].CreatedAt = t0.Add(-time.Hour)
			}
			return o
		}, want{kind: RemoveMember, id: 3}},
		{"leader is the one to remove: move leadership first", size(2), func() Observed {
			o := cluster(3)
			pod(&o, mname(1)).CreatedAt = t0.Add(-time.Minute)
			mem(&o, 3).RaftIndex = 10001
			return o
		}, want{kind: MoveLeader, from: 1, to: 3}},
		{"after leadership moved the old leader is removed", size(2), func() Observed {
			o := cluster(3)
			pod(&o, mname(1)).CreatedAt = t0.Add(-time.Minute)
			o.LeaderID = 3
			return o
		}, want{kind: RemoveMember, id: 1}},
		{"scale down removes an unhealthy member first", size(3), func() Observed {
			o := cluster(4)
			unreachable(&o, 2, t0.Add(-5*time.Second)) // within grace: still chosen first
			return o
		}, want{kind: RemoveMember, id: 2}},
		{"scale down 2 to 1: newest is the leader, move first", size(1), func() Observed { return cluster(2) }, want{kind: MoveLeader, from: 1, to: 2}},
		{"scale down 2 to 1 after the move", size(1), func() Observed { o := cluster(2); o.LeaderID = 2; return o }, want{kind: RemoveMember, id: 1}},
		{"scale 7 to 5 removes the newest follower", size(5), func() Observed {
			o := cluster(7)
			pod(&o, mname(6)).CreatedAt = t0
			return o
		}, want{kind: RemoveMember, id: 6}},
		{"scale down waits for in-flight learner", size(3), func() Observed {
			o := cluster(5)
			withLearner(&o, 99, "c-new", true, true, true, 0)
			return o
		}, want{kind: RemoveMember, id: 99, reason: "LearnerNotNeeded"}},
		{"scale down during a dead member replaces the dead one", size(3), func() Observed {
			o := cluster(5)
			crashloop(&o, 5, t0.Add(-time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 5}},
	})
}

func TestPlanDeadMembers(t *testing.T) {
	runCases(t, []tcase{
		{"pod missing beyond gone grace: replace", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			unreachable(&o, 2, t0.Add(-time.Minute))
			return o
		}, want{kind: ReplaceMember, id: 2, name: mname(2), deletePod: no()}},
		{"pod missing within gone grace: wait", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			unreachable(&o, 2, t0.Add(-3*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"pod missing, nothing recorded yet: grace starts now", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			unreachable(&o, 2, time.Time{})
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"pod missing but member still answers: replaced after grace", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			mem(&o, 2).UnhealthySince = t0.Add(-time.Minute)
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"crash-looping beyond grace: replace with pod", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 3, t0.Add(-DefaultReplaceUnhealthyAfter-time.Second))
			return o
		}, want{kind: ReplaceMember, id: 3, deletePod: yes()}},
		{"crash-looping within grace: wait", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 3, t0.Add(-30*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"node not ready beyond grace: replace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-10*time.Minute))
			pod(&o, mname(3)).NodeNotReady = true
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"pod being deleted beyond gone grace: replace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-20*time.Second))
			pod(&o, mname(3)).Deleting = true
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"pod failed beyond gone grace: replace", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-20*time.Second))
			pod(&o, mname(3)).Phase = PodFailed
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"DNS lag: pod running, member unreachable 60s after restart: wait", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-60*time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"recreated pod gets full grace despite old unhealthy record", size(3), func() Observed {
			o := cluster(3)
			unreachable(&o, 3, t0.Add(-time.Hour))
			pod(&o, mname(3)).CreatedAt = t0.Add(-5 * time.Second)
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"two dead of 5: the one down longest first", size(5), func() Observed {
			o := cluster(5)
			crashloop(&o, 2, t0.Add(-10*time.Minute))
			crashloop(&o, 4, t0.Add(-20*time.Minute))
			return o
		}, want{kind: ReplaceMember, id: 4}},
		{"two dead of 5 after the first removal: the second", size(5), func() Observed {
			o := cluster(5)
			crashloop(&o, 2, t0.Add(-10*time.Minute))
			dropMember(&o, 4)
			dropPod(&o, mname(4))
			return o
		}, want{kind: ReplaceMember, id: 2}},
		{"after replacements the cluster regrows", size(5), func() Observed {
			o := cluster(5)
			dropMember(&o, 4)
			dropPod(&o, mname(4))
			dropMember(&o, 2)
			dropPod(&o, mname(2))
			o.RetiredNames = []string{mname(2), mname(4)}
			return o
		}, want{kind: AddLearner, check: func(t *testing.T, a Action) {
			if a.Name == mname(2) || a.Name == mname(4) {
				t.Errorf("reused a removed member's name %s", a.Name)
			}
		}}},
		{"leader dead, stale leader id: wait for election", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			return o
		}, want{kind: Wait, reason: "NoLeader"}},
		{"leader dead, new leader elected: replace old leader", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			o.LeaderID = 2
			return o
		}, want{kind: ReplaceMember, id: 1}},
		{"dead member waits for the in-flight learner", size(3), func() Observed {
			o := cluster(2)
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			o.Members = append(o.Members, Member{ID: 3, Name: mname(3), UnhealthySince: t0.Add(-time.Hour)})
			return o
		}, want{kind: PromoteLearner, id: 99}},
		{"dead member is replaced before an upgrade", size(3), func() Observed {
			o := cluster(3)
			for i := range o.Members {
				o.Members[i].Version = v36
				o.Pods[i].Version = v36
			}
			crashloop(&o, 3, t0.Add(-time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 3}},
		{"even size 4 with one dead: replace", size(4), func() Observed {
			o := cluster(4)
			crashloop(&o, 4, t0.Add(-time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 4}},
		{"size 7 with three dead: replace one", size(7), func() Observed {
			o := cluster(7)
			crashloop(&o, 5, t0.Add(-time.Hour))
			crashloop(&o, 6, t0.Add(-2*time.Hour))
			crashloop(&o, 7, t0.Add(-3*time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 7}},
		{"1-member cluster whose pod crashed: quorum wait, never replace", size(1), func() Observed {
			o := cluster(1)
			crashloop(&o, 1, t0.Add(-time.Minute))
			return o
		}, want{kind: Wait, reason: "QuorumUnavailable"}},
		{"reachable quorum but pods gone: degraded wait", size(3), func() Observed {
			o := cluster(3)
			dropPod(&o, mname(2))
			dropPod(&o, mname(3))
			return o
		}, want{kind: Wait, reason: "Degraded"}},
	})
}

func TestPlanQuorumLoss(t *testing.T) {
	optIn := func(n int) func() Desired {
		return func() Desired { d := desired(n); d.QuorumLossRecovery = true; return d }
	}
	twoOfThreeDown := func(since time.Time) func() Observed {
		return func() Observed {
			o := cluster(3)
			crashloop(&o, 1, since)
			crashloop(&o, 2, since)
			mem(&o, 3).Revision = 4999
			return o
		}
	}
	runCases(t, []tcase{
		{"quorum lost briefly: wait", size(3), twoOfThreeDown(t0.Add(-time.Minute)), want{kind: Wait, reason: "QuorumUnavailable"}},
		{"quorum lost for long: report only", size(3), twoOfThreeDown(t0.Add(-time.Hour)), want{kind: QuorumLost, reason: "QuorumLost"}},
		{"quorum lost for long with opt-in: force new cluster from survivor", optIn(3), twoOfThreeDown(t0.Add(-time.Hour)),
			want{kind: ForceNewCluster, from: 3, name: mname(3)}},
		{"quorum lost, opt-in, still in grace: wait", optIn(3), twoOfThreeDown(t0.Add(-time.Minute)), want{kind: Wait, reason: "QuorumUnavailable"}},
		{"quorum loss time is when the quorum-breaking member fell", optIn(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Minute)) // second failure: quorum lost a minute ago
			return o
		}, want{kind: Wait, reason: "QuorumUnavailable"}},
		{"force new cluster picks the highest revision, not the lowest id", optIn(5), func() Observed {
			o := cluster(5)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			crashloop(&o, 3, t0.Add(-time.Hour))
			mem(&o, 4).Revision = 100
			mem(&o, 5).Revision = 200
			return o
		}, want{kind: ForceNewCluster, from: 5}},
		{"force new cluster never from a member without pod", optIn(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			dropPod(&o, mname(3))
			return o
		}, want{kind: QuorumLost, reason: "NoSurvivor"}},
		{"1-member cluster down for long with opt-in: no survivor", optIn(1), func() Observed {
			o := cluster(1)
			crashloop(&o, 1, t0.Add(-time.Hour))
			return o
		}, want{kind: QuorumLost, reason: "NoSurvivor"}},
		{"even 4 with two down is quorum loss", size(4), func() Observed {
			o := cluster(4)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			o.LeaderID = 3
			mem(&o, 3).Reachable = true
			return o
		}, want{kind: Wait, reason: "PartialVisibility"}},
		{"even 4 with two down and no leader is quorum loss", size(4), func() Observed {
			o := cluster(4)
			crashloop(&o, 1, t0.Add(-time.Hour))
			crashloop(&o, 2, t0.Add(-time.Hour))
			return o
		}, want{kind: QuorumLost}},
		{"size 7 with four down: quorum lost", size(7), func() Observed {
			o := cluster(7)
			for id := uint64(1); id <= 4; id++ {
				crashloop(&o, id, t0.Add(-time.Hour))
			}
			return o
		}, want{kind: QuorumLost}},
		{"reachable leader with minority view: partial visibility, never force", optIn(5), func() Observed {
			o := cluster(5)
			for id := uint64(2); id <= 4; id++ {
				unreachable(&o, id, t0.Add(-time.Hour))
			}
			return o
		}, want{kind: Wait, reason: "PartialVisibility"}},
		{"quorum reachable, no leader: wait for election", size(3), func() Observed {
			o := cluster(3)
			o.LeaderID = 0
			return o
		}, want{kind: Wait, reason: "NoLeader"}},
		{"learners do not count for quorum", size(3), func() Observed {
			o := cluster(1)
			crashloop(&o, 1, t0.Add(-time.Hour))
			withLearner(&o, 99, "c-new", true, true, true, 10000)
			return o
		}, want{kind: QuorumLost}},
	})
}

func TestPlanOrphans(t *testing.T) {
	runCases(t, []tcase{
		{"orphan pod is deleted", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-old"}},
		{"orphan without annotation is deleted", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-old", Phase: PodFailed, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-old"}},
		{"young orphan is left for later", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-2 * time.Second)})
			return o
		}, want{kind: Done, check: func(t *testing.T, a Action) {
			if a.RequeueAfter != DefaultReplaceGoneAfter-2*time.Second {
				t.Errorf("requeue %v", a.RequeueAfter)
			}
		}}},
		{"orphan already deleting is not deleted again", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Deleting: true, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: Done}},
		{"pod annotated with an id whose member has another name is orphan", size(3), func() Observed {
			o := cluster(3)
			o.Pods = append(o.Pods, Pod{Name: "c-dup", MemberID: 2, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-dup"}},
		{"no orphan deletion before bootstrapped is recorded", size(3), func() Observed {
			o := cluster(3)
			o.Bootstrapped = false
			o.Pods = append(o.Pods, Pod{Name: "c-old", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: Done}},
		{"pending pod is never an orphan", size(5), func() Observed {
			o := cluster(3)
			o.Pending = &PendingMember{Name: "c-new", ID: 99, AddedAt: t0.Add(-time.Second)}
			o.Pods = append(o.Pods, Pod{Name: "c-new", Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: AddLearner}},
		{"orphans are deleted even while a learner is in flight", size(5), func() Observed {
			o := cluster(3)
			withLearner(&o, 99, "c-new", true, true, true, 100)
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: "c-old"}},
		{"orphans are not touched without quorum", size(3), func() Observed {
			o := cluster(3)
			crashloop(&o, 1, t0.Add(-time.Minute))
			crashloop(&o, 2, t0.Add(-time.Minute))
			o.Pods = append(o.Pods, Pod{Name: "c-old", MemberID: 42, Phase: PodRunning, CreatedAt: t0.Add(-time.Hour)})
			return o
		}, want{kind: Wait, reason: "QuorumUnavailable"}},
		{"after force-new-cluster the old members' pods are orphans", size(3), func() Observed {
			o := cluster(3)
			dropMember(&o, 1)
			dropMember(&o, 2)
			o.LeaderID = 3
			witnessed(&o)
			return o
		}, want{kind: DeletePod, name: mname(1)}},
	})
}

func upgrading(n int, leader uint64, done ...uint64) func() Observed {
	return func() Observed {
		o := cluster(n)
		o.LeaderID = leader
		isDone := map[uint64]bool{}
		for _, id := range done {
			isDone[id] = true
		}
		for i := range o.Members {
			if !isDone[o.Members[i].ID] {
				o.Members[i].Version = v36
				o.Pods[i].Version = v36
			}
		}
		return o
	}
}

func TestPlanUpgrade(t *testing.T) {
	to := func(v string) func() Desired { return func() Desired { d := desired(3); d.Version = v; return d } }
	runCases(t, []tcase{
		{"upgrade starts with a follower", size(3), upgrading(3, 1), want{kind: UpgradeMember, id: 2, name: mname(2), version: v37}},
		{"upgrade continues with the next follower", size(3), upgrading(3, 1, 2), want{kind: UpgradeMember, id: 3}},
		{"leader last: move leadership to an upgraded member", size(3), func() Observed {
			o := upgrading(3, 1, 2, 3)()
			mem(&o, 3).RaftIndex = 10002
			return o
		}, want{kind: MoveLeader, from: 1, to: 3}},
		{"old leader upgraded after the move", size(3), upgrading(3, 2, 2, 3), want{kind: UpgradeMember, id: 1}},
		{"upgrade waits for the restarted member to run the new version", size(3), func() Observed {
			o := upgrading(3, 1)()
			pod(&o, mname(2)).Version = v37 // image changed, process not restarted yet
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress"}},
		{"upgrade waits while the restarted member is down", size(3), func() Observed {
			o := upgrading(3, 1)()
			pod(&o, mname(2)).Version = v37
			unreachable(&o, 2, t0.Add(-time.Second))
			return o
		}, want{kind: Wait, reason: "MemberUnhealthy"}},
		{"upgrade waits for a restarted member to rejoin the leader", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			mem(&o, 2).LeaderUnknown = true // answers Status, has not heard from the leader yet
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress", check: wantMessage(mname(2))}},
		{"upgrade waits for a restarted member's pod to be Ready", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			pod(&o, mname(2)).Ready = false // serving, readiness probe not passed yet
			return o
		}, want{kind: Wait, reason: "UpgradeInProgress", check: wantMessage(mname(2))}},
		{"upgrade of a 1-member cluster restarts it in place", size(1), upgrading(1, 1), want{kind: UpgradeMember, id: 1}},
		{"upgrade done", size(3), upgrading(3, 1, 1, 2, 3), want{kind: Done}},
		{"v-prefixed desired version equals running", func() Desired { d := desired(3); d.Version = "v3.7.3"; return d },
			func() Observed { return cluster(3) }, want{kind: Done}},
		{"patch upgrade allowed", to("3.7.4"), func() Observed { return cluster(3) }, want{kind: UpgradeMember, id: 2, version: "3.7.4"}},
		{"patch downgrade allowed", to("3.7.2"), func() Observed { return cluster(3) }, want{kind: UpgradeMember, id: 2, version: "3.7.2"}},
		{"minor downgrade refused", to(v36), func() Observed { return cluster(3) }, want{kind: RefuseUpgrade, reason: "UpgradeRefused",
			check: wantMessage("downgrade")}},
		{"minor skip refused", to(v37), func() Observed {
			o := cluster(3)
			for i := range o.Members {
				o.Members[i].Version, o.Pods[i].Version = "3.5.21", "3.5.21"
			}
			return o
		}, want{kind: RefuseUpgrade, check: wantMessage("skips a minor")}},
		{"major change refused", to("4.0.0"), func() Observed { return cluster(3) }, want{kind: RefuseUpgrade, check: wantMessage("major")}},
		{"half-upgraded cluster cannot jump further", to("3.8.0"), upgrading(3, 1, 2), want{kind: RefuseUpgrade, check: wantMessage(mname(1))}},
		{"half-upgraded cluster cannot roll back a minor", to(v36), upgrading(3, 1, 2), want{kind: RefuseUpgrade}},
		{"invalid version refused", to("three"), func() Observed { return cluster(3) }, want{kind: RefuseUpgrade, reason: "InvalidVersion"}},
		{"unknown running version: wait", size(3), func() Observed {
			o := cluster(3)
			mem(&o, 2).Version, pod(&o, mname(2)).Version = "", ""
			return o
		}, want{kind: Wait, reason: "VersionUnknown"}},
		{"pod version used when status has none", size(3), func() Observed {
			o := upgrading(3, 1)()
			mem(&o, 2).Version = ""
			return o
		}, want{kind: UpgradeMember, id: 2}},
		{"scale-up before upgrade, new member on the desired version", func() Desired { return desired(5) }, upgrading(3, 1),
			want{kind: AddLearner, version: v37}},
		{"scale-up with a refused upgrade uses the running version", func() Desired { d := desired(5); d.Version = "3.9.0"; return d },
			upgrading(3, 1), want{kind: AddLearner, version: v36}},
		{"pod for learner with a refused upgrade uses highest running version", func() Desired { d := desired(5); d.Version = "3.8.0"; return d },
			func() Observed {
				o := upgrading(3, 1, 2)()
				withLearner(&o, 99, "c-new", false, false, false, 0)
				mem(&o, 99).Version = ""
				return o
			}, want{kind: CreatePod, version: v37}},
		{"replacement during an upgrade joins on the new version", size(3), func() Observed {
			o := upgrading(3, 1, 2)()
			dropMember(&o, 3)
			dropPod(&o, mname(3))
			return o
		}, want{kind: AddLearner, version: v37}},
		{"refused upgrade does not block repairs", to("3.9.0"), func() Observed {
			o := cluster(3)
			crashloop(&o, 2, t0.Add(-time.Hour))
			return o
		}, want{kind: ReplaceMember, id: 2}},
	})
}

func wantMessage(sub string) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if !strings.Contains(a.Message, sub) {
			t.Errorf("message %q does not mention %q", a.Message, sub)
		}
	}
}

// TestPlanSequences drives whole procedures by applying each action to a
// simulated observation, checking each step is the expected one.
func TestPlanSequences(t *testing.T) {
	t.Run("scale 1 to 3", func(t *testing.T) {
		d, o := desired(3), cluster(1)
		var kinds []string
		for step := 0; step < 20; step++ {
			a := Plan(d, o)
			checkInvariants(t, d, o, a)
			kinds = append(kinds, a.Kind.String())
			if a.Kind == Done {
				break
			}
			o = simulate(t, o, a)
		}
		want := "AddLearner CreatePod Wait PromoteLearner AddLearner CreatePod Wait PromoteLearner Done"
		if got := strings.Join(kinds, " "); got != want {
			t.Fatalf("steps\n got %s\nwant %s", got, want)
		}
		if len(o.Members) != 3 {
			t.Fatalf("%d members", len(o.Members))
		}
	})
	t.Run("rolling upgrade of 3", func(t *testing.T) {
		d, o := desired(3), upgrading(3, 1)()
		var steps []string
		for step := 0; step < 20; step++ {
			a := Plan(d, o)
			checkInvariants(t, d, o, a)
			steps = append(steps, a.String()[:strings.IndexAny(a.String()+" ", " ")])
			if a.Kind == Done {
				break
			}
			o = simulate(t, o, a)
		}
		want := "UpgradeMember{c-m2 UpgradeMember{c-m3 MoveLeader{1 UpgradeMember{c-m1 Done"
		if got := strings.Join(steps, " "); got != want {
			t.Fatalf("steps\n got %s\nwant %s", got, want)
		}
	})
	t.Run("quorum loss recovery regrows the cluster", func(t *testing.T) {
		d, o := desired(3), cluster(3)
		d.QuorumLossRecovery = true
		crashloop(&o, 1, t0.Add(-time.Hour))
		crashloop(&o, 2, t0.Add(-time.Hour))
		var kinds []string
		for step := 0; step < 30; step++ {
			a := Plan(d, o)
			checkInvariants(t, d, o, a)
			kinds = append(kinds, a.Kind.String())
			if a.Kind == Done {
				break
			}
			o = simulate(t, o, a)
			if a.Kind == ForceNewCluster || a.Kind == DeletePod {
				o.Now = o.Now.Add(time.Minute) // orphans age past the list-lag guard
			}
		}
		want := "ForceNewCluster DeletePod DeletePod AddLearner CreatePod Wait PromoteLearner AddLearner CreatePod Wait PromoteLearner Done"
		if got := strings.Join(kinds, " "); got != want {
			t.Fatalf("steps\n got %s\nwant %s", got, want)
		}
	})
	t.Run("scale 5 to 3 with the leader newest", func(t *testing.T) {
		d, o := desired(3), cluster(5)
		var kinds []string
		for step := 0; step < 30; step++ {
			a := Plan(d, o)
			checkInvariants(t, d, o, a)
			kinds = append(kinds, a.Kind.String())
			if a.Kind == Done {
				break
			}
			o = simulate(t, o, a)
		}
		want := "MoveLeader RemoveMember RemoveMember Done"
		if got := strings.Join(kinds, " "); got != want {
			t.Fatalf("steps\n got %s\nwant %s", got, want)
		}
		var kept []uint64
		for _, m := range o.Members {
			kept = append(kept, m.ID)
		}
		if fmt.Sprint(kept) != "[3 4 5]" {
			t.Fatalf("kept %v; want the three oldest [3 4 5]", kept)
		}
	})
	t.Run("replace a dead member of 3", func(t *testing.T) {
		d, o := desired(3), cluster(3)
		crashloop(&o, 2, t0.Add(-time.Hour))
		var kinds []string
		for step := 0; step < 20; step++ {
			a := Plan(d, o)
			checkInvariants(t, d, o, a)
			kinds = append(kinds, a.Kind.String())
			if a.Kind == Done {
				break
			}
			o = simulate(t, o, a)
		}
		want := "ReplaceMember AddLearner CreatePod Wait PromoteLearner Done"
		if got := strings.Join(kinds, " "); got != want {
			t.Fatalf("steps\n got %s\nwant %s", got, want)
		}
		for _, m := range o.Members {
			if m.Name == mname(2) {
				t.Fatal("dead member's name reused")
			}
		}
	})
}

// simulate applies a to o the way a well-behaved controller and etcd would,
// advancing time by a second.
func simulate(t *testing.T, o Observed, a Action) Observed {
	t.Helper()
	o.Now = o.Now.Add(time.Second)
	if a.ClearPending {
		o.Pending = nil
	}
	nextID := uint64(100)
	for _, m := range o.Members {
		if m.ID >= nextID {
			nextID = m.ID + 1
		}
	}
	switch a.Kind {
	case AddLearner:
		o.Members = append(o.Members, Member{ID: nextID, IsLearner: true, UnhealthySince: o.Now})
		o.Pending = &PendingMember{Name: a.Name, ID: nextID, AddedAt: o.Now}
	case CreatePod:
		o.Pods = append(o.Pods, Pod{Name: a.Name, MemberID: a.ID, Phase: PodRunning, Version: a.Version, CreatedAt: o.Now})
	case Wait:
		// The pending learner starts and catches up.
		for i := range o.Members {
			m := &o.Members[i]
			if m.IsLearner && o.Pending != nil && m.ID == o.Pending.ID {
				m.Name, m.Reachable, m.RaftIndex, m.Revision, m.UnhealthySince = o.Pending.Name, true, 10000, 5000, time.Time{}
				m.Version = pod(&o, m.Name).Version
				pod(&o, m.Name).Ready = true
			}
		}
	case PromoteLearner:
		mem(&o, a.ID).IsLearner = false
	case ReplaceMember, RemoveMember:
		name := mem(&o, a.ID).Name
		dropMember(&o, a.ID)
		if a.DeletePod {
			dropPod(&o, name)
		}
		o.RetiredNames = append(o.RetiredNames, name)
	case MoveLeader:
		o.LeaderID = a.To
	case ForceNewCluster:
		var kept []Member
		for _, m := range o.Members {
			if m.ID == a.From {
				kept = append(kept, m)
			}
		}
		o.Members, o.LeaderID = kept, a.From
	case DeletePod:
		dropPod(&o, a.Name)
	case UpgradeMember:
		pod(&o, a.Name).Version = a.Version
		mem(&o, a.ID).Version = a.Version
	default:
		t.Fatalf("simulate: unexpected %v", a)
	}
	witnessed(&o)
	return o
}

func TestRemovalSafe(t *testing.T) {
	o := cluster(3)
	v := newView(desired(3).withDefaults(), o)
	if !v.removalSafe(v.byID[3]) {
		t.Error("removing one healthy member of 3 healthy should be safe")
	}
	o = cluster(3)
	unreachable(&o, 2, t0)
	v = newView(desired(3).withDefaults(), o)
	if v.removalSafe(v.byID[3]) {
		t.Error("removing a healthy member of 3 with one down leaves 1 alive of 2: unsafe")
	}
	if !v.removalSafe(v.byID[2]) {
		t.Error("removing the down member leaves 2 alive of 2: safe")
	}
	o = cluster(1)
	v = newView(desired(1).withDefaults(), o)
	if v.removalSafe(v.byID[1]) {
		t.Error("removing the last voter must never be safe")
	}
	o = cluster(1)
	withLearner(&o, 99, "c-new", true, true, true, 0)
	v = newView(desired(1).withDefaults(), o)
	if !v.removalSafe(v.byID[99]) {
		t.Error("removing a learner is always quorum-safe")
	}
}

func TestCaughtUp(t *testing.T) {
	for _, c := range []struct {
		learner, leader, lag uint64
		want                 bool
	}{
		{0, 0, 1000, true},
		{100, 90, 1000, true},
		{40, 50, 1000, false}, // below etcd's 90%
		{45, 50, 1000, true},
		{9000, 10000, 1000, true},
		{8999, 10000, 1000, false},
		{999000, 1000000, 1000, true},
		{998999, 1000000, 1000, false},
		{9500, 10000, 100, false},
	} {
		if got := caughtUp(c.learner, c.leader, c.lag); got != c.want {
			t.Errorf("caughtUp(%d, %d, %d) = %v, want %v", c.learner, c.leader, c.lag, got, c.want)
		}
	}
}

func TestPlanDoesNotMutateInput(t *testing.T) {
	o := cluster(5)
	o.Members[0], o.Members[4] = o.Members[4], o.Members[0]
	crashloop(&o, 2, t0.Add(-time.Hour))
	before := fmt.Sprintf("%+v", o)
	Plan(desired(3), o)
	Summarize(desired(3), o, Plan(desired(3), o))
	if after := fmt.Sprintf("%+v", o); after != before {
		t.Fatal("Plan modified its input")
	}
}

func TestActionString(t *testing.T) {
	for k := Wait; k <= ForceNewCluster; k++ {
		if s := k.String(); strings.HasPrefix(s, "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
	if s := Kind(99).String(); s != "Kind(99)" {
		t.Errorf("unknown kind prints %q", s)
	}
	a := Action{Kind: MoveLeader, From: 1, To: 0xa, Reason: "ScalingDown"}
	if s := a.String(); s != "MoveLeader{1 -> a} ScalingDown" {
		t.Errorf("got %q", s)
	}
}

// An abandoned learner's name is forgotten once its pending record is
// cleared; a later attempt must still not propose it again.
func TestForgottenNameIsNotReproposed(t *testing.T) {
	d, o := desired(5), cluster(3)
	first := Plan(d, o)
	o.Now = o.Now.Add(time.Minute) // learner added, abandoned, record cleared
	second := Plan(d, o)
	if first.Kind != AddLearner || second.Kind != AddLearner {
		t.Fatalf("got %v then %v", first, second)
	}
	if first.Name == second.Name {
		t.Fatalf("name %s proposed twice", first.Name)
	}
}

func TestLeaderTarget(t *testing.T) {
	o := upgrading(4, 1, 3)()
	mem(&o, 2).RaftIndex = 10005 // longest log, but old version
	mem(&o, 4).RaftIndex = 10009 // longest log, old version, about to be removed
	v := newView(desired(4).withDefaults(), o)
	target, _ := ParseVersion(v37)
	if got := v.leaderTarget(v.leader, &target, nil); got.ID != 3 {
		t.Errorf("upgrade target %x, want 3 (runs the new version)", got.ID)
	}
	if got := v.leaderTarget(v.leader, nil, nil); got.ID != 4 {
		t.Errorf("plain target %x, want 4 (longest log)", got.ID)
	}
	if got := v.leaderTarget(v.leader, nil, map[uint64]bool{4: true}); got.ID != 2 {
		t.Errorf("target avoiding 4 is %x, want 2", got.ID)
	}
	if got := v.leaderTarget(v.leader, nil, map[uint64]bool{2: true, 3: true, 4: true}); got == nil || got.ID != 4 {
		t.Errorf("when all are avoided the best is still chosen, got %v", got)
	}
	crashloop(&o, 2, t0)
	crashloop(&o, 3, t0)
	crashloop(&o, 4, t0)
	v = newView(desired(4).withDefaults(), o)
	if got := v.leaderTarget(v.leader, nil, nil); got != nil {
		t.Errorf("target %x although no other voter is alive", got.ID)
	}
}
