package planner

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func cond(s Summary, typ v1beta2.ClusterConditionType) Condition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return Condition{Type: "missing"}
}

func TestSummarize(t *testing.T) {
	type exp struct {
		phase                                v1beta2.ClusterPhase
		available, recovering, scaling, upgr bool
		reason                               string
	}
	for _, c := range []struct {
		name string
		d    Desired
		o    Observed
		want exp
	}{
		{"creating", desired(3), Observed{Now: t0}, exp{phase: v1beta2.ClusterPhaseCreating, scaling: true, reason: "Bootstrapping"}},
		{"healthy", desired(3), cluster(3), exp{phase: v1beta2.ClusterPhaseRunning, available: true}},
		{"scaling up", desired(5), cluster(3), exp{phase: v1beta2.ClusterPhaseRunning, available: true, scaling: true, reason: "ScalingUp"}},
		{"scaling down", desired(1), cluster(3), exp{phase: v1beta2.ClusterPhaseRunning, available: true, scaling: true, reason: "ScalingDown"}},
		{"upgrading", desired(3), upgrading(3, 1)(), exp{phase: v1beta2.ClusterPhaseRunning, available: true, upgr: true, reason: "Upgrading"}},
		{"recovering", desired(3), func() Observed { o := cluster(3); crashloop(&o, 2, t0.Add(-time.Hour)); return o }(),
			exp{phase: v1beta2.ClusterPhaseRunning, available: true, recovering: true, reason: "ReplacingDeadMember"}},
		{"quorum lost", desired(3), crashlooping(3, 1, 2)(), exp{phase: v1beta2.ClusterPhaseFailed, recovering: true, reason: "QuorumLost"}},
		{"paused", func() Desired { d := desired(3); d.Paused = true; return d }(), cluster(3),
			exp{phase: v1beta2.ClusterPhaseRunning, available: true, reason: "Paused"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Plan(c.d, c.o)
			s := Summarize(c.d, c.o, a)
			if s.Phase != c.want.phase || s.Reason != c.want.reason {
				t.Errorf("phase/reason = %s/%s, want %s/%s", s.Phase, s.Reason, c.want.phase, c.want.reason)
			}
			for typ, want := range map[v1beta2.ClusterConditionType]bool{v1beta2.ClusterConditionAvailable: c.want.available, v1beta2.ClusterConditionRecovering: c.want.recovering,
				v1beta2.ClusterConditionScaling: c.want.scaling, v1beta2.ClusterConditionUpgrading: c.want.upgr} {
				if got := cond(s, typ); got.Status != want || got.Reason == "" && want {
					t.Errorf("%s = %+v, want status %v", typ, got, want)
				}
			}
		})
	}
}

func TestSummarizeMembersAndVersions(t *testing.T) {
	o := upgrading(3, 1, 2)()
	crashloop(&o, 3, t0)
	d := desired(3)
	d.Version = "3.9.0"
	s := Summarize(d, o, Plan(d, o))
	if got := len(s.ReadyMembers); got != 2 || s.UnreadyMembers[0] != mname(3) {
		t.Errorf("ready %v unready %v", s.ReadyMembers, s.UnreadyMembers)
	}
	if s.CurrentVersion != v36 || s.TargetVersion != "3.9.0" {
		t.Errorf("versions %s -> %s", s.CurrentVersion, s.TargetVersion)
	}
	if up := cond(s, v1beta2.ClusterConditionUpgrading); up.Status || up.Reason != "UpgradeRefused" {
		t.Errorf("upgrading condition %+v, want refused", up)
	}
}

// Available is decided here alone: etcd's quorum is not enough while fewer than a quorum
// of voters have a Ready pod, since clients reach members through the Service.
func TestSummarizeAvailableNeedsReadyPods(t *testing.T) {
	d := desired(3)
	o := cluster(3)
	pod(&o, mname(1)).Ready = false
	s := Summarize(d, o, Plan(d, o))
	if a := cond(s, v1beta2.ClusterConditionAvailable); !a.Status || len(s.ReadyMembers) != 2 || s.UnreadyMembers[0] != mname(1) {
		t.Errorf("one pod unready: available %+v, ready %v unready %v; want available with 2 ready", a, s.ReadyMembers, s.UnreadyMembers)
	}
	pod(&o, mname(2)).Ready = false
	s = Summarize(d, o, Plan(d, o))
	if a := cond(s, v1beta2.ClusterConditionAvailable); a.Status || a.Reason != "MembersNotReady" {
		t.Errorf("two of three pods unready: available %+v, want False/MembersNotReady", a)
	}
	// A learner's Ready pod does not make up for a voter's: learners serve no clients.
	withLearner(&o, 9, "learner", true, true, true, 10)
	pod(&o, "learner").Ready = true
	s = Summarize(d, o, Plan(d, o))
	if a := cond(s, v1beta2.ClusterConditionAvailable); a.Status {
		t.Errorf("a ready learner counted towards availability: %+v", a)
	}
}
