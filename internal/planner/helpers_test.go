package planner

import (
	"testing"
)

func TestLeaderTarget(t *testing.T) {
	o := upgrading(4, 1, 3)()
	mem(&o, 2).RaftIndex = 10005 // longest log, but old version
	mem(&o, 4).RaftIndex = 10009 // longest log, old version, about to be removed
	v := newView(desired(4).withDefaults(), o)
	target, _ := ParseVersion(v37)
	if got := v.leaderTarget(v.leader, &target, nil); got.ID != 3 {
		t.Errorf("upgrade target %x, want 3 (runs the new version)", got.ID)
	}
	if got := v.leaderTarget(v.leader, nil, nil); got.ID != 4 {
		t.Errorf("plain target %x, want 4 (longest log)", got.ID)
	}
	if got := v.leaderTarget(v.leader, nil, map[uint64]bool{4: true}); got.ID != 2 {
		t.Errorf("target avoiding 4 is %x, want 2", got.ID)
	}
	if got := v.leaderTarget(v.leader, nil, map[uint64]bool{2: true, 3: true, 4: true}); got == nil || got.ID != 4 {
		t.Errorf("when all are avoided the best is still chosen, got %v", got)
	}
	crashloop(&o, 2, t0)
	crashloop(&o, 3, t0)
	crashloop(&o, 4, t0)
	v = newView(desired(4).withDefaults(), o)
	if got := v.leaderTarget(v.leader, nil, nil); got != nil {
		t.Errorf("target %x although no other voter is alive", got.ID)
	}
}
