package planner

import (
	"strings"
	"testing"
)

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
