package planner

import (
	"strings"
	"testing"
	"time"
)

// The bootstrap rule: a cluster that never formed is bootstrapped all at once, and nothing is
// deleted while it forms.
func TestPlanBootstrap(t *testing.T) {
	runCases(t, []tcase{
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
		{"formed but not yet recorded as bootstrapped proceeds", size(3), func() Observed {
			o := cluster(3)
			o.Bootstrapped = false
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

// pendingBootstrap is a 3-member bootstrap whose pods were created from a spec they
// cannot run on (an unsatisfiable nodeSelector, a mistyped TLS Secret): etcd never ran,
// and the spec has since been corrected (drift).
func pendingBootstrap(drift Drift) func() Observed {
	return func() Observed {
		o := Observed{Now: t0, BootstrapMembers: []string{"c-a", "c-b", "c-c"}}
		for _, n := range o.BootstrapMembers {
			o.Pods = append(o.Pods, Pod{Name: n, Phase: PodPending, Version: v37, EtcdNeverRan: true, Drift: drift,
				CreatedAt: t0.Add(-10 * time.Minute), UnhealthySince: t0.Add(-10 * time.Minute)})
			o.Claims = append(o.Claims, n)
		}
		return o
	}
}

var (
	nodeSelectorFixed = Drift{Fields: []string{"pod.nodeSelector"}, NewPod: true}
	secretFixed       = Drift{Fields: []string{"TLS.static.member.peerSecret"}, TLS: true}
	claimSpecFixed    = Drift{Claim: true}
)

func TestPlanNeverFormedFollowsAnySpecFix(t *testing.T) {
	keepClaim := func(keep bool) func(t *testing.T, a Action) {
		return func(t *testing.T, a Action) {
			if a.KeepClaim != keep {
				t.Errorf("KeepClaim = %v, want %v", a.KeepClaim, keep)
			}
		}
	}
	runCases(t, []tcase{
		{"nodeSelector corrected: the first pod is deleted, its claim kept", size(3), pendingBootstrap(nodeSelectorFixed),
			want{kind: DeletePod, name: "c-a", reason: "CorrectingBootstrap", check: func(t *testing.T, a Action) {
				keepClaim(true)(t, a)
				wantMessage("pod.nodeSelector")(t, a)
			}}},
		{"TLS Secret name corrected: likewise", size(3), pendingBootstrap(secretFixed),
			want{kind: DeletePod, name: "c-a", reason: "CorrectingBootstrap", check: wantMessage("peerSecret")}},
		{"cluster domain corrected (held on a running cluster): likewise", size(3), pendingBootstrap(Drift{Held: []string{"pod.ClusterDomain"}}),
			want{kind: DeletePod, name: "c-a", reason: "CorrectingBootstrap"}},
		{"claim spec corrected, claim never bound: the pod and its claim", size(3), func() Observed {
			o := pendingBootstrap(claimSpecFixed)()
			o.UnboundClaims = o.Claims
			return o
		}, want{kind: DeletePod, name: "c-a", reason: "CorrectingBootstrap", check: keepClaim(false)}},
		{"claim spec corrected, claim bound: the pod only", size(3), pendingBootstrap(claimSpecFixed),
			want{kind: DeletePod, name: "c-a", reason: "CorrectingBootstrap", check: func(t *testing.T, a Action) {
				keepClaim(true)(t, a)
				wantMessage("kept")(t, a)
			}}},
		{"first pod being deleted: the next, before any missing pod is created", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			pod(&o, "c-a").Deleting = true
			return o
		}, want{kind: DeletePod, name: "c-b"}},
		{"first pod gone, the others lack the spec: they go before it is created", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			dropPod(&o, "c-a")
			return o
		}, want{kind: DeletePod, name: "c-b"}},
		{"every pod gone or going: the bootstrap is completed from the spec, same names", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			dropPod(&o, "c-a")
			dropPod(&o, "c-b")
			pod(&o, "c-c").Deleting = true
			return o
		}, want{kind: Bootstrap, reason: "CompletingBootstrap", check: func(t *testing.T, a Action) {
			if got := names(a.Members); got != "c-a,c-b,c-c" {
				t.Errorf("members %s (the initial cluster must not change)", got)
			}
		}}},
		{"pods recreated from the spec run etcd: nothing more to do", size(3), func() Observed {
			o := pendingBootstrap(Drift{})()
			for i := range o.Pods {
				o.Pods[i].EtcdRunning, o.Pods[i].EtcdNeverRan = true, false
			}
			return o
		}, want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"labels only (patched once formed): not recreated", size(3), pendingBootstrap(Drift{Fields: []string{"pod.labels"}, Metadata: true}),
			want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"a pod lacking the spec ran etcd: nothing is deleted", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			pod(&o, "c-b").EtcdNeverRan = false
			return o
		}, want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"a pod lacking the spec runs etcd: nothing is deleted", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			pod(&o, "c-c").EtcdRunning, pod(&o, "c-c").EtcdNeverRan = true, false
			return o
		}, want{kind: Wait, reason: "WaitingForClusterToForm"}},
		{"never once the cluster was bootstrapped", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			o.Bootstrapped = true
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"never when a pod proves the cluster formed", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			pod(&o, "c-b").MemberID = 7
			return o
		}, want{kind: QuorumLost, reason: "NoEndpoint"}},
		{"never pods the recorded bootstrap does not cover", size(3), func() Observed {
			o := pendingBootstrap(nodeSelectorFixed)()
			o.BootstrapMembers = nil
			return o
		}, want{kind: Wait, reason: "BootstrapUnknown"}},
	})
}
