package planner

import (
	"strings"
	"testing"
)

// OldVersionPath: the minor steps a cluster CoreOS left on an old etcd has left, and the
// two ways to take them.
func TestOldVersionPath(t *testing.T) {
	for _, tc := range []struct {
		from      string
		ok        bool
		steps     string
		inMessage []string
	}{
		{"3.2.13", true, "3.3 3.4 3.5", []string{"3.2 → 3.3 → 3.4 → 3.5", "latest 3.3, then 3.4, then 3.5 patch", "restore-cluster-spec", "read-only"}},
		{"3.3.27", true, "3.4 3.5", []string{"3.3 → 3.4 → 3.5", "CoreOS etcd-operator", "EtcdRestore"}},
		{"3.4.35", true, "3.5", []string{"3.4 → 3.5", "up to 3.5", "first keep this operator off the cluster (give it another scope", "not spec.paused"}},
		{"3.1.20", true, "3.2 3.3 3.4 3.5", []string{"3.1 → 3.2 → 3.3 → 3.4 → 3.5"}},
		{"2.3.8", true, "", []string{"major version", "restore a snapshot"}},
		{"3.5.0", false, "", nil},
		{"3.6.16", false, "", nil},
	} {
		v, err := ParseVersion(tc.from)
		if err != nil {
			t.Fatal(err)
		}
		steps, msg, ok := OldVersionPath(v)
		if ok != tc.ok || strings.Join(steps, " ") != tc.steps {
			t.Errorf("%s: steps %v ok %v, want %q ok %v", tc.from, steps, ok, tc.steps, tc.ok)
		}
		for _, s := range tc.inMessage {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: message %q lacks %q", tc.from, msg, s)
			}
		}
	}
}
