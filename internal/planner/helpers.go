package planner

import (
	"time"
)

// Small helpers more than one rule uses.

// Requeue hints for Wait actions.
const (
	requeueShort = 2 * time.Second
	requeueWait  = 5 * time.Second
	requeueLong  = 30 * time.Second
)

// wait is a Wait action: nothing is done, the controller looks again after after.
func wait(reason, msg string, after time.Duration) Action {
	return Action{Kind: Wait, Reason: reason, Message: msg, RequeueAfter: after}
}

// remaining is how much of grace is left after elapsed, at least a second so a
// requeue never spins.
func remaining(grace, elapsed time.Duration) time.Duration {
	r := grace - elapsed
	if r < time.Second {
		r = time.Second
	}
	return r
}

// podNameTaken reports whether any pod has the name.
func (v *view) podNameTaken(name string) bool {
	for i := range v.o.Pods {
		if v.o.Pods[i].Name == name {
			return true
		}
	}
	return false
}

// runningVersion is what m runs: its Status answer, else its pod's image.
func (v *view) runningVersion(m *Member) string {
	if m.Version != "" {
		return m.Version
	}
	if p := v.podOf[m.ID]; p != nil {
		return p.Version
	}
	return ""
}

// memberVersions is the version m runs (its Status answer) and the one its pod names,
// parsed; runOK and specOK say which parsed, and when only one did it stands for both.
func (v *view) memberVersions(m *Member) (run, spec Version, runOK, specOK bool) {
	run, rerr := ParseVersion(m.Version)
	var podVersion string
	if p := v.podOf[m.ID]; p != nil {
		podVersion = p.Version
	}
	spec, serr := ParseVersion(podVersion)
	switch {
	case rerr != nil && serr == nil:
		run = spec
	case serr != nil && rerr == nil:
		spec = run
	}
	return run, spec, rerr == nil, serr == nil
}

// leaderTarget picks the alive voter to hand leadership to. In order of
// preference: not in avoid (members about to be removed, so leadership does
// not have to move twice), running prefer (if given), the longest raft log,
// the lowest ID.
func (v *view) leaderTarget(from *Member, prefer *Version, avoid map[uint64]bool) *Member {
	runs := func(m *Member) bool {
		if prefer == nil {
			return false
		}
		rv, err := ParseVersion(m.Version)
		return err == nil && rv.Compare(*prefer) == 0
	}
	better := func(a, b *Member) bool {
		if aa, ba := !avoid[a.ID], !avoid[b.ID]; aa != ba {
			return aa
		}
		if ra, rb := runs(a), runs(b); ra != rb {
			return ra
		}
		if a.RaftIndex != b.RaftIndex {
			return a.RaftIndex > b.RaftIndex
		}
		return a.ID < b.ID
	}
	var best *Member
	for _, m := range v.voters {
		if m == from || !v.alive(m) {
			continue
		}
		if best == nil || better(m, best) {
			best = m
		}
	}
	return best
}

// hasClaim reports whether a data claim named name exists.
func (v *view) hasClaim(name string) bool {
	for _, c := range v.o.Claims {
		if c == name {
			return true
		}
	}
	return false
}
