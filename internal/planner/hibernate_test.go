package planner

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The hibernation rule: size 0 stops the pods on their claims, keeps the membership, and a size above
// 0 brings the same members back through the recreate rule.

func hibernating() Desired { d := desired(0); d.DataOnClaims = true; return d }

// hibernatingTLS is hibernating with peer and client TLS.
func hibernatingTLS() Desired { d := hibernating(); d.PeerTLS, d.ClientTLS = true, true; return d }

// claimed is a healthy 3-member cluster whose members keep their data on claims.
func claimed() Observed {
	o := cluster(3)
	withClaims(&o, 1, 2, 3)
	return o
}

// stopped is that cluster once every pod is gone: no member answers, status still names
// the members, their claims are there.
func stopped() Observed {
	o := claimed()
	o.MembersKnown, o.Members, o.Pods, o.LeaderID = false, nil, nil, 0
	return o
}

// resumeOn is a resume (size 3 again) with spec.version v.
func resumeOn(v string) func() Desired {
	return func() Desired { d := desired(3); d.DataOnClaims = true; d.Version = v; return d }
}

// stoppedOn is stopped with status.currentVersion v recorded.
func stoppedOn(v string) func() Observed {
	return func() Observed { o := stopped(); o.RecordedVersion = v; return o }
}

func deleting(o *Observed, ids ...uint64) {
	for _, id := range ids {
		pod(o, mname(id)).Deleting = true
	}
}

func TestPlanHibernate(t *testing.T) {
	keepsClaim := func(t *testing.T, a Action) {
		t.Helper()
		if !a.KeepClaim {
			t.Errorf("%v deletes the claim with the pod", a)
		}
	}
	runCases(t, []tcase{
		{"size 0 without claims in the spec is refused", size(0), claimed,
			want{kind: Wait, reason: "InvalidSpec", check: wantMessage("spec.pod.persistentVolumeClaimSpec")}},
		{"size 0 stops a follower first, keeping its claim", hibernating, claimed,
			want{kind: DeletePod, name: mname(2), id: 2, reason: "Hibernating", check: keepsClaim}},
		{"the next follower while the first terminates", hibernating, func() Observed {
			o := claimed()
			deleting(&o, 2)
			return o
		}, want{kind: DeletePod, name: mname(3), reason: "Hibernating", check: keepsClaim}},
		{"the leader's pod last", hibernating, func() Observed {
			o := claimed()
			deleting(&o, 2, 3)
			return o
		}, want{kind: DeletePod, name: mname(1), reason: "Hibernating", check: keepsClaim}},
		{"a leader of another name stops last too", hibernating, func() Observed {
			o := claimed()
			o.LeaderID = 2
			return o
		}, want{kind: DeletePod, name: mname(1), reason: "Hibernating"}},
		{"every pod terminating: wait", hibernating, func() Observed {
			o := claimed()
			deleting(&o, 1, 2, 3)
			return o
		}, want{kind: Wait, reason: "Hibernating", check: wantMessage(mname(1))}},
		{"no pod left: hibernated, naming the members that come back", hibernating, stopped,
			want{kind: Wait, reason: "Hibernated", check: wantMessage("c-m1, c-m2, c-m3")}},
		{"operator restarted while hibernated: still hibernated, nothing created", hibernating, func() Observed {
			o := stopped()
			o.Claims = append(o.Claims, "c-stray") // a claim of no recorded member changes nothing
			return o
		}, want{kind: Wait, reason: "Hibernated"}},
		{"a pod without its claim: nothing is stopped", hibernating, func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 3)
			return o
		}, want{kind: Wait, reason: "HibernationRefused", check: wantMessage(mname(2))}},
		{"a cluster domain change held: nothing is stopped (the resume would take it up all at once)", hibernating, func() Observed {
			o := claimed()
			pod(&o, mname(2)).Drift = Drift{Held: []string{"cluster domain"}}
			return o
		}, want{kind: Wait, reason: "HibernationRefused", check: wantMessage(mname(2) + " do not run the spec's TLS scheme or cluster domain")}},
		{"TLS being turned on (pods still plaintext): nothing is stopped", hibernatingTLS, func() Observed {
			o := claimed()
			for i := range o.Pods {
				o.Pods[i].Drift = Drift{TLS: true}
			}
			return o
		}, want{kind: Wait, reason: "HibernationRefused", check: wantMessage("nothing is stopped")}},
		{"a proven rotation of the TLS Secrets pending: stopped as usual", hibernatingTLS, func() Observed {
			o := claimed()
			for i := range o.Pods {
				o.Pods[i].PeerTLS, o.Pods[i].ClientTLS, o.Pods[i].Drift = true, true, Drift{TLS: true}
			}
			return o
		}, want{kind: DeletePod, name: mname(2), reason: "Hibernating"}},
		{"no quorum: pods are still stopped, membership untouched", hibernating, func() Observed {
			o := claimed()
			unreachable(&o, 1, t0.Add(-time.Hour))
			unreachable(&o, 2, t0.Add(-time.Hour))
			o.LeaderID = 0
			return o
		}, want{kind: DeletePod, name: mname(1), reason: "Hibernating"}},
		{"a learner in flight stops too; its record is kept for the resume", hibernating, func() Observed {
			o := claimed()
			withLearner(&o, 9, "c-m9", true, true, true, 9000)
			o.Claims = append(o.Claims, "c-m9")
			deleting(&o, 2, 3)
			return o
		}, want{kind: DeletePod, name: "c-m9", reason: "Hibernating", clearPending: no()}},
		{"a failed pod is stopped like any other", hibernating, func() Observed {
			o := claimed()
			pod(&o, mname(2)).Phase = PodFailed
			return o
		}, want{kind: DeletePod, name: mname(2), reason: "Hibernating"}},
		{"never formed at size 0: nothing to create", hibernating, func() Observed { return Observed{Now: t0, NameSeed: "s"} },
			want{kind: Wait, reason: "Hibernated", check: wantMessage("creates the cluster")}},
		{"paused at size 0 touches nothing", func() Desired { d := hibernating(); d.Paused = true; return d }, claimed,
			want{kind: Wait, reason: "Paused"}},
		{"negative size is still invalid", func() Desired { d := desired(-1); d.DataOnClaims = true; return d }, claimed,
			want{kind: Wait, reason: "InvalidSpec"}},

		// Resume: the recreate rule puts the recorded members back on their claims.
		{"resume: the first recorded member gets its pod back", func() Desired { d := desired(3); d.DataOnClaims = true; return d }, stopped,
			want{kind: CreatePod, name: mname(1), reason: "RecreatingPod"}},
		{"resume to a smaller size first brings every member back", func() Desired { d := desired(1); d.DataOnClaims = true; return d }, func() Observed {
			o := stopped()
			o.Pods = []Pod{{Name: mname(1), Phase: PodRunning, CreatedAt: t0}}
			return o
		}, want{kind: CreatePod, name: mname(2), reason: "RecreatingPod"}},
		{"resume with a member list: the other voters back on their claims", func() Desired { d := desired(3); d.DataOnClaims = true; return d }, func() Observed {
			o := claimed()
			dropPod(&o, mname(2))
			dropPod(&o, mname(3))
			unreachable(&o, 2, t0)
			unreachable(&o, 3, t0)
			return o
		}, want{kind: CreatePod, name: mname(2), id: 2, reason: "RecreatingPod"}},
		// Resume with spec.version changed while hibernated: the members restart on the
		// version recorded when they last answered; the upgrade rule moves them afterwards.
		{"resume after spec.version went up a minor: back on the recorded version", resumeOn("3.8.0"), stoppedOn(v37),
			want{kind: CreatePod, name: mname(1), version: v37, reason: "RecreatingPod"}},
		{"resume after spec.version went down a minor: back on the recorded version", resumeOn(v36), stoppedOn(v37),
			want{kind: CreatePod, name: mname(1), version: v37}},
		{"resume after spec.version skipped two minors down: back on the recorded version", resumeOn("3.5.36"), stoppedOn(v37),
			want{kind: CreatePod, name: mname(1), version: v37}},
		{"resume after a patch change: back on the recorded patch", resumeOn("3.7.9"), stoppedOn(v37),
			want{kind: CreatePod, name: mname(1), version: v37}},
		{"resume, no version recorded (an older operator's status): spec.version", resumeOn(v36), stoppedOn(""),
			want{kind: CreatePod, name: mname(1), version: v36}},
		{"resume, a recorded version this operator does not run: spec.version", resumeOn(v36), stoppedOn("3.4.35"),
			want{kind: CreatePod, name: mname(1), version: v36}},
		{"resume with a member list, spec.version changed: the others on what the first runs", resumeOn("3.8.0"), func() Observed {
			o := claimed()
			o.RecordedVersion = v37
			dropPod(&o, mname(2))
			dropPod(&o, mname(3))
			unreachable(&o, 2, t0)
			unreachable(&o, 3, t0)
			return o
		}, want{kind: CreatePod, name: mname(2), id: 2, version: v37, reason: "RecreatingPod"}},
		{"all back on the recorded version: then the upgrade rule rolls the patch, one member at a time", resumeOn("3.7.9"), func() Observed {
			o := claimed()
			o.RecordedVersion = v37
			return o
		}, want{kind: UpgradeMember, id: 2, version: "3.7.9"}},
		{"all back on the recorded version: a minor step waits on the upgrade rule's checks", resumeOn("3.8.0"), func() Observed {
			o := claimed()
			o.RecordedVersion = v37
			return o
		}, want{kind: Wait, reason: "UpgradeWaitsForSnapshot"}},
		{"resumed to a smaller size: scaled down once all are back", func() Desired { d := desired(1); d.DataOnClaims = true; return d }, func() Observed {
			o := claimed()
			o.LeaderID = 3
			return o
		}, want{kind: RemoveMember, reason: "ScalingDown"}},
	})
}

func TestSummarizeHibernation(t *testing.T) {
	cond := func(s Summary, typ v1beta2.ClusterConditionType) Condition {
		for _, c := range s.Conditions {
			if c.Type == typ {
				return c
			}
		}
		t.Fatalf("no condition %s in %+v", typ, s.Conditions)
		return Condition{}
	}
	d := hibernating()

	o := stopped()
	s := Summarize(d, o, Plan(d, o))
	if s.Phase != "Hibernated" || s.Reason != "Hibernated" {
		t.Errorf("stopped: phase %q reason %q, want Hibernated", s.Phase, s.Reason)
	}
	if av := cond(s, v1beta2.ClusterConditionAvailable); av.Status || av.Reason != "Hibernated" {
		t.Errorf("stopped: Available %+v, want False/Hibernated", av)
	}
	if sc := cond(s, v1beta2.ClusterConditionScaling); sc.Status || sc.Reason != "Hibernated" {
		t.Errorf("stopped: Scaling %+v, want False/Hibernated", sc)
	}
	if rec := cond(s, v1beta2.ClusterConditionRecovering); rec.Status {
		t.Errorf("stopped: Recovering %+v, want False", rec)
	}
	// The record the recreate rule reads back: the members stay listed while none runs.
	if got := s.UnreadyMembers; len(got) != 3 || got[0] != mname(1) {
		t.Errorf("stopped: unready members %v, want the three recorded", got)
	}

	o = claimed()
	s = Summarize(d, o, Plan(d, o))
	if s.Phase != "Running" {
		t.Errorf("stopping: phase %q, want Running until every pod is gone", s.Phase)
	}
	if sc := cond(s, v1beta2.ClusterConditionScaling); !sc.Status || sc.Reason != "Hibernating" {
		t.Errorf("stopping: Scaling %+v, want True/Hibernating", sc)
	}
	if av := cond(s, v1beta2.ClusterConditionAvailable); av.Status || av.Reason != "Hibernating" {
		t.Errorf("stopping: Available %+v, want False/Hibernating", av)
	}

	// Refused: the cluster keeps running and says why.
	o = cluster(3)
	s = Summarize(d, o, Plan(d, o))
	if s.Phase != "Running" || s.Reason != "HibernationRefused" {
		t.Errorf("refused: phase %q reason %q", s.Phase, s.Reason)
	}
	if av := cond(s, v1beta2.ClusterConditionAvailable); !av.Status {
		t.Errorf("refused: Available %+v, want True (nothing stopped)", av)
	}
}
