package planner

import (
	"strings"
	"testing"
	"time"
)

// Rule 4: a cluster that never formed is bootstrapped all at once, and nothing is
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
