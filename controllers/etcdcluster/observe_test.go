package etcdcluster

import (
	"strings"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// TestQuorumLossGrace: the annotation is read overflow-safely, and a grace so short that
// a blip (an election, a restart, a node briefly unreachable) would count as a lasting
// quorum loss is raised to the floor, with a warning; what cannot be read falls back to
// the planner's default, with a warning.
func TestQuorumLossGrace(t *testing.T) {
	const floor = DefaultMinQuorumLossGrace
	for _, tc := range []struct {
		value    string // "-" for no annotation
		want     time.Duration
		warnings []string // substrings of the warning; none: no warning
	}{
		{"-", 0, nil},
		{"90s", 90 * time.Second, nil},
		{"1m", time.Minute, nil},
		{"2000000h", 2000000 * time.Hour, nil},
		{"15s", floor, []string{AnnotationQuorumLossGrace, `"15s"`, "below the minimum 1m0s", "using 1m0s"}},
		{"1ns", floor, []string{"below the minimum"}},
		{"100000000h", 0, []string{`"100000000h"`, "not a positive duration", "default 5m0s"}},
		{"9223372036854775808ns", 0, []string{"not a positive duration"}},
		{"abc", 0, []string{"not a positive duration"}},
		{"", 0, []string{"not a positive duration"}},
		{"-5s", 0, []string{"not a positive duration"}},
		{"0s", 0, []string{"not a positive duration"}},
	} {
		c := newTestCluster()
		if tc.value != "-" {
			c.Annotations = map[string]string{AnnotationQuorumLossGrace: tc.value}
		}
		got, warning := quorumLossGrace(c, floor)
		if got != tc.want {
			t.Errorf("%q: grace %v, want %v", tc.value, got, tc.want)
		}
		if len(tc.warnings) == 0 && warning != "" {
			t.Errorf("%q: warning %q, want none", tc.value, warning)
		}
		for _, w := range tc.warnings {
			if !strings.Contains(warning, w) {
				t.Errorf("%q: warning %q does not say %q", tc.value, warning, w)
			}
		}
		if d := desiredFromSpec(c, floor).QuorumLossGrace; d != tc.want {
			t.Errorf("%q: planner grace %v, want %v", tc.value, d, tc.want)
		}
	}
	// The operator's own floor (lower on the test bench) is what applies.
	c := newTestCluster()
	c.Annotations = map[string]string{AnnotationQuorumLossGrace: "15s"}
	if d := desiredFromSpec(c, 10*time.Second).QuorumLossGrace; d != 15*time.Second {
		t.Errorf("floor 10s: grace %v, want 15s", d)
	}
}

func newTestCluster() *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
}
