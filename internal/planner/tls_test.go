package planner

import (
	"testing"
	"time"
)

// tlsDesired wants peer and client TLS.
func tlsDesired(n int) func() Desired {
	return func() Desired {
		d := desired(n)
		d.PeerTLS, d.ClientTLS = true, true
		return d
	}
}

// rotating is a healthy n-member TLS cluster led by leader whose members other than done
// run on other Secrets than the spec names; with claims if claims.
func rotating(n int, leader uint64, claims bool, done ...uint64) func() Observed {
	return rollingOut(n, leader, claims, func(o *Observed, id uint64, done bool) {
		p := pod(o, mname(id))
		p.PeerTLS, p.ClientTLS, p.PeerServesTLS = true, true, true
		mem(o, id).PeerURLs = []string{"https://" + mname(id) + ":2380"}
		if !done {
			p.Drift = Drift{Fields: []string{"TLS.static.member.peerSecret"}, TLS: true}
		}
	}, done...)
}

// plain makes the pods of members ids run without TLS (their Drift.TLS stays).
func plain(o *Observed, ids ...uint64) {
	for _, id := range ids {
		p := pod(o, mname(id))
		p.PeerTLS, p.ClientTLS, p.PeerServesTLS, p.ClientPlaintext = false, false, false, true
		mem(o, id).PeerURLs = []string{"http://" + mname(id) + ":2380"}
	}
}

// The rollout rule, TLS part (tls.go).
func TestPlanTLSRotation(t *testing.T) {
	runCases(t, []tcase{
		{"proven rotation: a follower first, on its claim", tlsDesired(3), rotating(3, 1, true),
			want{kind: DeletePod, reason: "Reconfiguring", name: mname(2), check: wantKeepClaim}},
		{"proven rotation: the next follower once the first is back", tlsDesired(3), rotating(3, 1, true, 2),
			want{kind: DeletePod, name: mname(3), check: wantKeepClaim}},
		{"proven rotation: leadership moved off the leader before it is rotated", tlsDesired(3), rotating(3, 1, true, 2, 3),
			want{kind: MoveLeader, reason: "Reconfiguring", from: 1}},
		{"proven rotation: the old leader once it follows", tlsDesired(3), rotating(3, 2, true, 2, 3),
			want{kind: DeletePod, name: mname(1), check: wantKeepClaim}},
		{"proven rotation: all rotated, done", tlsDesired(3), rotating(3, 1, true, 1, 2, 3), want{kind: Done}},
		{"proven rotation: health gate between members", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true, 2)()
			mem(&o, 2).LeaderUnknown = true
			return o
		}, want{kind: Wait, reason: "ReconfigureInProgress", check: wantMessage(mname(2))}},
		{"proven rotation without claims: through a learner", tlsDesired(3), rotating(3, 1, false),
			want{kind: AddLearner, reason: "Reconfiguring", check: wantMessage(mname(2))}},
		{"proven rotation: paused", func() Desired { d := tlsDesired(3)(); d.Paused = true; return d }, rotating(3, 1, true),
			want{kind: Wait, reason: "Paused"}},
		{"unproven rotation: refused, nothing restarted", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true)()
			o.TLSRefused = `secret "p2" (peer.crt) does not verify against the CA bundle of secret "p1" (peer-ca.crt)`
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage(`secret "p2"`)}},
		{"unproven rotation mid-way: refused too", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true, 2)()
			o.TLSRefused = "x"
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused"}},
		{"refusal holds metadata patches too", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true)()
			o.TLSRefused = "x"
			driftMetadata(&o, 3)
			pod(&o, mname(3)).Drift.TLS = true
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused"}},
		{"refusal holds a replacing learner: abandoned, not promoted", tlsDesired(3), func() Observed {
			o := rotating(3, 1, false)()
			o.TLSRefused = "x"
			withLearner(&o, 9, "c-new", true, true, true, 10000)
			return o
		}, want{kind: RemoveMember, id: 9, reason: "LearnerNotNeeded"}},
		{"TLS to plaintext: refused", size(3), rotating(3, 1, true),
			want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("turning TLS off")}},
		{"peer TLS added to client-TLS-only members: refused", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true)()
			for i := uint64(1); i <= 3; i++ {
				pod(&o, mname(i)).PeerTLS = false
			}
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("adding peer TLS")}},
		{"refused change with another restart pending: nothing restarted", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true)()
			o.TLSRefused = "x"
			driftNewPod(&o, 2)
			pod(&o, mname(2)).Drift.TLS = true
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused"}},
		{"refused change does not stop repairs", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true)()
			o.TLSRefused = "x"
			crashloop(&o, 3, t0.Add(-time.Hour))
			dropPod(&o, mname(3))
			o.Claims = []string{mname(1), mname(2)}
			return o
		}, want{kind: ReplaceMember, id: 3}},
	})
}

func TestTLSRefusal(t *testing.T) {
	d := tlsDesired(3)()
	o := rotating(3, 1, true)()
	if got := TLSRefusal(d, o); got != "" {
		t.Errorf("proven rotation refused: %q", got)
	}
	o.TLSRefused = "why"
	if got := TLSRefusal(d, o); got == "" {
		t.Error("unproven rotation not refused")
	}
	o = cluster(3)
	o.TLSRefused = "stale proof, nothing pending"
	if got := TLSRefusal(d, o); got != "" {
		t.Errorf("no TLS drift, refused: %q", got)
	}
	o = rotating(3, 1, true)()
	plain(&o, 2)
	pod(&o, mname(2)).Deleting = true
	for _, id := range []uint64{1, 3} {
		pod(&o, mname(id)).Drift.TLS = false
	}
	if got := TLSRefusal(d, o); got != "" {
		t.Errorf("a pod being deleted counted: %q", got)
	}
}

// Where a member is while a plaintext cluster is moved to TLS.
type tlsAt int

const (
	atPlain   tlsAt = iota // runs without TLS
	atCerts                // step 1 done: certificates, http peers, clients both ways
	atCutOff               // peer URL updated to https, pod still on http peers
	atPeerTLS              // step 2 done: https peers, clients both ways
	atTLS                  // step 3 done: the spec's
)

// enabling is a healthy 3-member cluster with claims, led by leader, whose members are
// at the given places, moving to TLS.
func enabling(leader uint64, at ...tlsAt) func() Observed {
	return func() Observed {
		o := rotating(len(at), leader, true, 1, 2, 3)()
		for i, a := range at {
			id := uint64(i + 1)
			p, m := pod(&o, mname(id)), mem(&o, id)
			switch a {
			case atPlain:
				plain(&o, id)
				p.Drift = Drift{Fields: []string{"TLS.static.member.peerSecret"}, TLS: true}
			case atCerts:
				p.PeerServesTLS, p.ClientPlaintext = false, true
				m.PeerURLs = []string{"http://" + mname(id) + ":2380"}
			case atCutOff:
				p.PeerServesTLS, p.ClientPlaintext = false, true
			case atPeerTLS:
				p.ClientPlaintext = true
			}
		}
		return o
	}
}

func TestPlanTLSEnable(t *testing.T) {
	runCases(t, []tcase{
		{"step 1: a follower restarted with certificates first", tlsDesired(3), enabling(1, atPlain, atPlain, atPlain),
			want{kind: DeletePod, reason: "Reconfiguring", name: mname(2), check: all(wantKeepClaim, wantMessage("step 1 of 3"))}},
		{"step 1: the next follower", tlsDesired(3), enabling(1, atPlain, atCerts, atPlain),
			want{kind: DeletePod, name: mname(3), check: wantKeepClaim}},
		{"step 1: leadership moved off before the leader", tlsDesired(3), enabling(1, atPlain, atCerts, atCerts),
			want{kind: MoveLeader, from: 1}},
		{"step 1: the old leader once it follows", tlsDesired(3), enabling(2, atPlain, atCerts, atCerts),
			want{kind: DeletePod, name: mname(1), check: wantKeepClaim}},
		{"step 1: health gate between members", tlsDesired(3), func() Observed {
			o := enabling(1, atPlain, atCerts, atPlain)()
			pod(&o, mname(2)).Ready = false
			return o
		}, want{kind: Wait, reason: "ReconfigureInProgress"}},
		{"step 1: paused", func() Desired { d := tlsDesired(3)(); d.Paused = true; return d }, enabling(1, atPlain, atPlain, atPlain),
			want{kind: Wait, reason: "Paused"}},
		{"step 2: a follower's peer URL updated", tlsDesired(3), enabling(1, atCerts, atCerts, atCerts),
			want{kind: UpdatePeerURL, reason: "Reconfiguring", name: mname(2), id: 2, check: wantMessage("step 2 of 3")}},
		{"step 2: the updated member restarts at once, before the health gate", tlsDesired(3), func() Observed {
			o := enabling(1, atCerts, atCutOff, atCerts)()
			mem(&o, 2).LeaderUnknown = true // cut off from its peers
			return o
		}, want{kind: DeletePod, name: mname(2), id: 2, check: all(wantKeepClaim, wantMessage("peers over https"))}},
		{"step 2: the next follower once the first is back", tlsDesired(3), enabling(1, atCerts, atPeerTLS, atCerts),
			want{kind: UpdatePeerURL, name: mname(3)}},
		{"step 2: leadership moved off before the leader's URL changes", tlsDesired(3), enabling(1, atCerts, atPeerTLS, atPeerTLS),
			want{kind: MoveLeader, from: 1}},
		{"step 2: the old leader's URL once it follows", tlsDesired(3), enabling(3, atCerts, atPeerTLS, atPeerTLS),
			want{kind: UpdatePeerURL, name: mname(1)}},
		{"step 3: plaintext dropped, a follower first", tlsDesired(3), enabling(1, atPeerTLS, atPeerTLS, atPeerTLS),
			want{kind: DeletePod, name: mname(2), check: all(wantKeepClaim, wantMessage("step 3 of 3"))}},
		{"step 3: leader last", tlsDesired(3), enabling(1, atPeerTLS, atTLS, atTLS), want{kind: MoveLeader, from: 1}},
		{"step 3 waits for step 2 everywhere", tlsDesired(3), enabling(1, atPeerTLS, atTLS, atCerts),
			want{kind: UpdatePeerURL, name: mname(3)}},
		{"all on TLS: done", tlsDesired(3), enabling(1, atTLS, atTLS, atTLS), want{kind: Done}},
		{"refused without claims", tlsDesired(3), func() Observed {
			o := enabling(1, atPlain, atPlain, atPlain)()
			o.Claims = nil
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("data claim")}},
		{"refused with two members", tlsDesired(2), func() Observed {
			o := rotating(2, 1, true)()
			plain(&o, 1, 2)
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("at least 3 members")}},
		{"refused with a peer Secret alone", func() Desired { d := tlsDesired(3)(); d.ClientTLS = false; return d },
			enabling(1, atPlain, atPlain, atPlain), want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("both a peer and a server Secret")}},
		{"repairs come first", tlsDesired(3), func() Observed {
			o := enabling(1, atCerts, atCerts, atCerts)()
			crashloop(&o, 3, t0.Add(-time.Hour))
			dropPod(&o, mname(3))
			o.Claims = []string{mname(1), mname(2)}
			return o
		}, want{kind: ReplaceMember, id: 3}},
	})
}

func TestTLSProgress(t *testing.T) {
	if got := TLSProgress(tlsDesired(3)(), enabling(1, atPeerTLS, atTLS, atCerts)()); got != "turning TLS on, step 2 of 3 (peer URLs to https): 2/3 members through this step" {
		t.Errorf("progress %q", got)
	}
	if got := TLSProgress(tlsDesired(3)(), enabling(1, atTLS, atTLS, atTLS)()); got != "" {
		t.Errorf("done, progress %q", got)
	}
}

// all runs every check.
func all(checks ...func(*testing.T, Action)) func(*testing.T, Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		for _, c := range checks {
			c(t, a)
		}
	}
}

func TestPlanTLSEnableNeverDropsData(t *testing.T) {
	runCases(t, []tcase{
		{"a member without a claim mid-way is not restarted", tlsDesired(3), func() Observed {
			o := enabling(1, atPeerTLS, atPeerTLS, atPeerTLS)()
			o.Claims = []string{mname(1), mname(3)}
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("no data claim")}},
		{"a cut-off member without a claim is not restarted", tlsDesired(3), func() Observed {
			o := enabling(1, atCerts, atCutOff, atCerts)()
			o.Claims = []string{mname(1), mname(3)}
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused"}},
	})
}
