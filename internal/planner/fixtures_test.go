package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Fixtures every rule's tests share: a healthy cluster and ways to break it, and
// the table runner that checks each plan against the invariants of property_test.go.

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const (
	v36 = "3.6.16"
	v37 = "3.7.3"
)

func desired(size int) Desired {
	return Desired{ClusterName: "c", Size: size, Version: v37}
}

func mname(id uint64) string { return fmt.Sprintf("c-m%d", id) }

// cluster is a formed, fully healthy n-member cluster on v37 led by member 1.
func cluster(n int) Observed {
	o := Observed{Now: t0, Bootstrapped: true, MembersKnown: true, LeaderID: 1, NameSeed: "seed"}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		o.Members = append(o.Members, Member{ID: id, Name: mname(id), PeerURLs: []string{"http://" + mname(id) + ":2380"},
			Reachable: true, RaftIndex: 10000, Revision: 5000, Version: v37})
		o.Pods = append(o.Pods, Pod{Name: mname(id), MemberID: id, Phase: PodRunning, Ready: true, Version: v37,
			CreatedAt: t0.Add(-time.Hour - time.Duration(i)*time.Minute)})
	}
	return o
}

// clusterOn is cluster(n) with every member and pod on version.
func clusterOn(n int, version string) Observed {
	o := cluster(n)
	for i := range o.Members {
		o.Members[i].Version, o.Pods[i].Version = version, version
	}
	return o
}

func mem(o *Observed, id uint64) *Member {
	for i := range o.Members {
		if o.Members[i].ID == id {
			return &o.Members[i]
		}
	}
	panic(fmt.Sprintf("no member %d", id))
}

func pod(o *Observed, name string) *Pod {
	for i := range o.Pods {
		if o.Pods[i].Name == name {
			return &o.Pods[i]
		}
	}
	panic("no pod " + name)
}

func dropPod(o *Observed, name string) {
	dropOne(&o.Pods, func(p Pod) bool { return p.Name == name }, "pod "+name)
}

func dropMember(o *Observed, id uint64) {
	dropOne(&o.Members, func(m Member) bool { return m.ID == id }, fmt.Sprintf("member %d", id))
}

// dropOne removes the first element of *s that is; the test fixture is wrong (a panic
// naming what) when there is none.
func dropOne[T any](s *[]T, is func(T) bool, what string) {
	i := slices.IndexFunc(*s, is)
	if i < 0 {
		panic("no " + what)
	}
	*s = append((*s)[:i], (*s)[i+1:]...)
}

// unreachable marks member id unreachable since t (and its pod unready).
func unreachable(o *Observed, id uint64, since time.Time) {
	m := mem(o, id)
	m.Reachable = false
	m.UnhealthySince = since
	for i := range o.Pods {
		if o.Pods[i].Name == m.Name {
			o.Pods[i].Ready = false
			o.Pods[i].UnhealthySince = since
		}
	}
}

func crashloop(o *Observed, id uint64, since time.Time) {
	unreachable(o, id, since)
	p := pod(o, mname(id))
	p.CrashLooping = true
	p.Terminated = true
}

func withLearner(o *Observed, id uint64, name string, started, reachable, withPod bool, idx uint64) {
	m := Member{ID: id, IsLearner: true, Reachable: reachable, RaftIndex: idx, Version: v37}
	if started {
		m.Name = name
	}
	if !reachable {
		m.UnhealthySince = o.Now
	}
	o.Members = append(o.Members, m)
	if withPod {
		o.Pods = append(o.Pods, Pod{Name: name, MemberID: id, Phase: PodRunning, Ready: reachable, Version: v37, CreatedAt: o.Now.Add(-20 * time.Second)})
	}
	o.Pending = &PendingMember{Name: name, ID: id, AddedAt: o.Now.Add(-30 * time.Second)}
}

func upgrading(n int, leader uint64, done ...uint64) func() Observed {
	return func() Observed {
		o := cluster(n)
		o.LeaderID = leader
		o.VersionSince = &VersionSince{Minor: "3.6"} // created on 3.6: no older log (snapshotgate.go)
		isDone := map[uint64]bool{}
		for _, id := range done {
			isDone[id] = true
		}
		for i := range o.Members {
			if !isDone[o.Members[i].ID] {
				o.Members[i].Version = v36
				o.Pods[i].Version = v36
			}
		}
		return o
	}
}

type want struct {
	kind         Kind
	reason       string
	id           uint64
	name         string
	from, to     uint64
	deletePod    *bool
	version      string
	clearPending *bool
	check        func(t *testing.T, a Action)
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func (w want) verify(t *testing.T, a Action) {
	t.Helper()
	if a.Kind != w.kind {
		t.Fatalf("kind = %v, want %v (action %v)", a.Kind, w.kind, a)
	}
	if w.reason != "" && a.Reason != w.reason {
		t.Errorf("reason = %q, want %q (action %v)", a.Reason, w.reason, a)
	}
	if w.id != 0 && a.ID != w.id {
		t.Errorf("id = %x, want %x (action %v)", a.ID, w.id, a)
	}
	if w.name != "" && a.Name != w.name {
		t.Errorf("name = %q, want %q (action %v)", a.Name, w.name, a)
	}
	if w.from != 0 && a.From != w.from {
		t.Errorf("from = %x, want %x (action %v)", a.From, w.from, a)
	}
	if w.to != 0 && a.To != w.to {
		t.Errorf("to = %x, want %x (action %v)", a.To, w.to, a)
	}
	if w.deletePod != nil && a.DeletePod != *w.deletePod {
		t.Errorf("deletePod = %v, want %v (action %v)", a.DeletePod, *w.deletePod, a)
	}
	if w.version != "" && a.Version != w.version {
		t.Errorf("version = %q, want %q (action %v)", a.Version, w.version, a)
	}
	if w.clearPending != nil && a.ClearPending != *w.clearPending {
		t.Errorf("clearPending = %v, want %v (action %v)", a.ClearPending, *w.clearPending, a)
	}
	if w.check != nil {
		w.check(t, a)
	}
}

type tcase struct {
	name string
	d    func() Desired
	o    func() Observed
	want want
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			d, o := tc.d(), tc.o()
			a := Plan(d, o)
			tc.want.verify(t, a)
			checkInvariants(t, d, o, a)
		})
	}
}

func size(n int) func() Desired { return func() Desired { return desired(n) } }

func wantMessage(sub string) func(t *testing.T, a Action) {
	return func(t *testing.T, a Action) {
		t.Helper()
		if !strings.Contains(a.Message, sub) {
			t.Errorf("message %q does not mention %q", a.Message, sub)
		}
	}
}
