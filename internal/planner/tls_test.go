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
	return func() Observed {
		o := cluster(n)
		o.LeaderID = leader
		isDone := map[uint64]bool{}
		for _, id := range done {
			isDone[id] = true
		}
		for i := 1; i <= n; i++ {
			p := pod(&o, mname(uint64(i)))
			p.PeerTLS, p.ClientTLS = true, true
			if !isDone[uint64(i)] {
				p.Drift = Drift{Fields: []string{"TLS.static.member.peerSecret"}, TLS: true}
			}
			if claims {
				withClaims(&o, uint64(i))
			}
		}
		return o
	}
}

// plain makes the pods of members ids run without TLS (their Drift.TLS stays).
func plain(o *Observed, ids ...uint64) {
	for _, id := range ids {
		p := pod(o, mname(id))
		p.PeerTLS, p.ClientTLS = false, false
	}
}

// Rule 17, TLS part (tls.go).
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
		{"plaintext to TLS: refused", tlsDesired(3), func() Observed {
			o := rotating(3, 1, true)()
			plain(&o, 1, 2, 3)
			return o
		}, want{kind: Wait, reason: "TLSChangeRefused", check: wantMessage("turning TLS on")}},
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
			plain(&o, 1, 2, 3)
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
