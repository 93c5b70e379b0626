package planner

import (
	"testing"
	"time"
)

func wantAsRunning(want bool) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if a.AsRunning != want {
			t.Errorf("AsRunning = %v, want %v (action %v)", a.AsRunning, want, a)
		}
	}
}

// podGone takes member id's pod away (its member stops answering), keeping its claim.
func podGone(o *Observed, id uint64) {
	dropPod(o, mname(id))
	unreachable(o, id, t0.Add(-time.Second))
}

// domainHeld marks the pods of ids as created under another cluster domain.
func domainHeld(o *Observed, ids ...uint64) {
	for _, id := range ids {
		pod(o, mname(id)).Drift = Drift{Held: []string{"pod.ClusterDomain"}}
	}
}

// New pods while a change is refused or held (asrunning.go).
func TestPlanNewPodsAsRunning(t *testing.T) {
	refusedRotation := func() Observed {
		o := rotating(3, 1, true)()
		o.TLSRefused = `secret "p2" (peer.crt) does not verify against the CA bundle of secret "p1" (peer-ca.crt)`
		return o
	}
	runCases(t, []tcase{
		{"unproven rotation: a missing pod comes back as the members run", tlsDesired(3), func() Observed {
			o := refusedRotation()
			podGone(&o, 2)
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod", name: mname(2), check: wantAsRunning(true)}},
		{"unproven rotation: a dead member's replacement joins as the members run", tlsDesired(3), func() Observed {
			o := rotating(2, 1, false)()
			o.TLSRefused = "x"
			return o
		}, want{kind: AddLearner, check: wantAsRunning(true)}},
		{"unproven rotation: the pod a recorded learner lacks, as the members run", tlsDesired(3), func() Observed {
			o := rotating(2, 1, false)()
			o.TLSRefused = "x"
			withLearner(&o, 9, "c-new", false, false, false, 0)
			o.Pending.AddedAt = t0.Add(-time.Second)
			return o
		}, want{kind: CreatePod, name: "c-new", check: wantAsRunning(true)}},
		{"proven rotation: the pod the rollout deleted comes back on the spec", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true, 2)()
			podGone(&o, 2)
			return o
		}, want{kind: CreatePod, name: mname(2), check: wantAsRunning(false)}},
		{"TLS to plaintext refused: a missing pod comes back on TLS", size(3), func() Observed {
			o := rotating(3, 1, true)()
			podGone(&o, 3)
			return o
		}, want{kind: CreatePod, name: mname(3), check: wantAsRunning(true)}},
		{"plaintext to TLS refused below three members: the scale-up learner joins plaintext", tlsDesired(3), func() Observed {
			o := rotating(2, 1, true)()
			plain(&o, 1, 2)
			return o
		}, want{kind: AddLearner, check: wantAsRunning(true)}},
		{"plaintext to TLS under way: a missing pod follows the steps, not the running members", tlsDesired(3), func() Observed {
			o := enabling(1, atCerts, atPlain, atPlain)()
			podGone(&o, 3)
			return o
		}, want{kind: CreatePod, name: mname(3), check: wantAsRunning(false)}},
		{"cluster domain held: a missing pod comes back under the running domain", size(3), func() Observed {
			o := cluster(3)
			withClaims(&o, 1, 2, 3)
			domainHeld(&o, 1, 2, 3)
			podGone(&o, 1)
			return o
		}, want{kind: CreatePod, name: mname(1), check: wantAsRunning(true)}},
		{"cluster domain held: the scale-up learner joins under the running domain", size(4), func() Observed {
			o := cluster(3)
			domainHeld(&o, 1, 2, 3)
			return o
		}, want{kind: AddLearner, check: wantAsRunning(true)}},
		{"nothing refused or held: new pods on the spec", size(4), func() Observed {
			o := cluster(3)
			driftNewPod(&o, 2)
			return o
		}, want{kind: AddLearner, check: wantAsRunning(false)}},
		{"refused, but no pod is created: nothing to say", tlsDesired(3), refusedRotation,
			want{kind: Wait, reason: "TLSChangeRefused", check: wantAsRunning(false)}},
		{"no member answers, no pod left: back on the spec (nothing runs to differ from)", tlsDesired(3), func() Observed {
			o := refusedRotation()
			o.MembersKnown, o.Members, o.Pods, o.LeaderID = false, nil, nil, 0
			return o
		}, want{kind: CreatePod, reason: "RecreatingPod", check: wantAsRunning(false)}},
		{"no member answers, pods of the others still there: as they run", tlsDesired(3), func() Observed {
			o := refusedRotation()
			o.MembersKnown, o.Members, o.LeaderID = false, nil, 0
			dropPod(&o, mname(1))
			return o
		}, want{kind: CreatePod, name: mname(1), check: wantAsRunning(true)}},
	})
}

func TestNewPodsAsRunning(t *testing.T) {
	o := rotating(3, 1, true)()
	if NewPodsAsRunning(tlsDesired(3)(), o) {
		t.Error("a proven rotation holds new pods")
	}
	o.TLSRefused = "why"
	if !NewPodsAsRunning(tlsDesired(3)(), o) {
		t.Error("an unproven rotation does not hold new pods")
	}
	o = cluster(3)
	if NewPodsAsRunning(size(3)(), o) {
		t.Error("a cluster on its spec holds new pods")
	}
	domainHeld(&o, 2)
	pod(&o, mname(2)).Deleting = true
	if !NewPodsAsRunning(size(3)(), o) {
		t.Error("a held field of a terminating pod does not hold new pods (its member still runs it)")
	}
}
