package etcdcluster

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestDecideStorage(t *testing.T) {
	q := resource.MustParse
	bound := func(name, class, request, capacity string, conds ...string) claimState {
		return claimState{Name: name, Class: class, Bound: true, Request: q(request), Capacity: q(capacity), Resizing: conds}
	}
	classes := storageClasses{"grow": true, "fixed": false}
	for _, tc := range []struct {
		name       string
		want       string // "" for no storage request
		claims     []claimState
		expand     []string
		settled    bool
		reason     string
		mentions   []string
		eventKeyed bool
	}{
		{name: "no storage request: nothing judged", claims: []claimState{bound("c-a", "grow", "1Gi", "1Gi")}, settled: true},
		{name: "no claims", want: "2Gi", settled: true},
		{name: "every claim at the size", want: "1Gi", settled: true,
			claims: []claimState{bound("c-a", "grow", "1Gi", "1Gi"), bound("c-b", "fixed", "1Gi", "2Gi")}},
		{name: "larger request, class allows: every claim below is expanded", want: "2Gi",
			claims: []claimState{bound("c-b", "grow", "1Gi", "1Gi"), bound("c-a", "grow", "1Gi", "1Gi"), bound("c-c", "grow", "2Gi", "2Gi")},
			expand: []string{"c-a", "c-b"}, reason: etcdv1beta2.ReasonClaimsExpanding,
			mentions: []string{"1 of 3 claims at 2Gi", "c-a: expansion requested", "c-b: expansion requested"}},
		{name: "expanding: progress from the claims' conditions and capacity", want: "2Gi",
			claims: []claimState{
				bound("c-a", "grow", "2Gi", "2Gi"),
				bound("c-b", "grow", "2Gi", "1Gi", "FileSystemResizePending"),
				bound("c-c", "grow", "2Gi", "1Gi"),
			},
			reason:   etcdv1beta2.ReasonClaimsExpanding,
			mentions: []string{"1 of 3 claims at 2Gi", "c-b: FileSystemResizePending", "c-c: at 1Gi, waiting for the volume to grow"}},
		{name: "class does not allow expansion: not patched, class named", want: "2Gi",
			claims: []claimState{bound("c-a", "fixed", "1Gi", "1Gi"), bound("c-b", "fixed", "1Gi", "1Gi")},
			reason: etcdv1beta2.ReasonExpansionNotAllowed, eventKeyed: true,
			mentions: []string{`c-a, c-b cannot grow to 2Gi: StorageClass "fixed" does not allow volume expansion`, "new members only"}},
		{name: "no class, or a class that is gone", want: "2Gi",
			claims: []claimState{bound("c-a", "", "1Gi", "1Gi"), bound("c-b", "deleted", "1Gi", "1Gi")},
			reason: etcdv1beta2.ReasonExpansionNotAllowed, eventKeyed: true,
			mentions: []string{"c-a cannot grow to 2Gi: it has no StorageClass", `c-b cannot grow to 2Gi: its StorageClass "deleted" is gone`}},
		{name: "mixed classes: the allowed ones grow, the others are reported first", want: "2Gi",
			claims: []claimState{bound("c-a", "grow", "1Gi", "1Gi"), bound("c-b", "fixed", "1Gi", "1Gi")},
			expand: []string{"c-a"}, reason: etcdv1beta2.ReasonExpansionNotAllowed, eventKeyed: true,
			mentions: []string{`StorageClass "fixed"`, "c-a: expansion requested"}},
		{name: "smaller request: never shrunk, applies to new members only", want: "1Gi",
			claims: []claimState{bound("c-a", "grow", "2Gi", "2Gi")},
			reason: etcdv1beta2.ReasonAppliesToNewMembersOnly, eventKeyed: true,
			mentions: []string{"cannot shrink", "applies to new members only", "c-a keeps 2Gi"}},
		{name: "an unbound claim is expanded once bound", want: "2Gi",
			claims: []claimState{{Name: "c-a", Class: "grow", Request: q("1Gi")}},
			reason: etcdv1beta2.ReasonClaimsExpanding, mentions: []string{"not bound yet, expanded once bound: c-a"}},
		{name: "an unbound claim at the size is provisioned at it", want: "2Gi", settled: true,
			claims: []claimState{{Name: "c-a", Class: "grow", Request: q("2Gi")}}},
		{name: "equal quantities written differently", want: "2048Mi", settled: true,
			claims: []claimState{bound("c-a", "grow", "2Gi", "2Gi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want *resource.Quantity
			if tc.want != "" {
				w := q(tc.want)
				want = &w
			}
			d := decideStorage(want, tc.claims, classes)
			if !slices.Equal(d.Expand, tc.expand) {
				t.Errorf("expand %v, want %v", d.Expand, tc.expand)
			}
			r := d.Report
			if r.Settled != tc.settled || r.Reason != tc.reason {
				t.Errorf("settled %v reason %q (%s), want %v %q", r.Settled, r.Reason, r.Message, tc.settled, tc.reason)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(r.Message, m) {
					t.Errorf("message %q does not mention %q", r.Message, m)
				}
			}
			if (r.EventKey != "") != tc.eventKeyed {
				t.Errorf("event key %q, want one: %v", r.EventKey, tc.eventKeyed)
			}
		})
	}
}

// Each claim's creation size is known to the SpecApplied comparison: the annotation the
// first expansion left, else the request.
func TestDecideStorageCreatedWith(t *testing.T) {
	q := resource.MustParse
	want := q("4Gi")
	d := decideStorage(&want, []claimState{
		{Name: "c-a", Class: "grow", Bound: true, Request: q("2Gi"), Capacity: q("2Gi"), RequestedAtCreation: "1Gi"},
		{Name: "c-b", Class: "grow", Bound: true, Request: q("1Gi"), Capacity: q("1Gi")},
	}, storageClasses{"grow": true})
	if got := d.Report.CreatedWith; got["c-a"] != "1Gi" || got["c-b"] != "1Gi" {
		t.Errorf("created with %v", got)
	}
}
