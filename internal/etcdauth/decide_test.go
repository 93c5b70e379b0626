package etcdauth

import (
	"errors"
	"strings"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestDecide(t *testing.T) {
	healthy3 := Observed{Wanted: true, RootSecret: "a-etcd-root", AuthKnown: true, Formed: true, Size: 3, Healthy: 3, Members: 3, Steady: true}
	with := func(f func(*Observed)) Observed { o := healthy3; f(&o); return o }
	for _, tc := range []struct {
		name       string
		o          Observed
		step       Step
		report     bool
		status     bool
		reason     string
		msgContain string
	}{
		{name: "not wanted", o: Observed{AuthKnown: true, Formed: true, Size: 3, Healthy: 3, Members: 3, Steady: true}, step: None},
		{name: "healthy and steady: enable", o: healthy3, step: Enable, report: true, reason: etcdv1beta2.ReasonAuthEnabling},
		{name: "on already", o: with(func(o *Observed) { o.AuthOn = true }), step: None, report: true, status: true,
			reason: etcdv1beta2.ReasonAuthEnabled, msgContain: "a-etcd-root"},
		{name: "a member down: refused", o: with(func(o *Observed) { o.Healthy = 2 }), step: Wait, report: true,
			reason: etcdv1beta2.ReasonAuthMembersUnhealthy, msgContain: "2 of 3"},
		{name: "a learner or extra member not answering", o: with(func(o *Observed) { o.Members = 4 }), step: Wait, report: true,
			reason: etcdv1beta2.ReasonAuthMembersUnhealthy, msgContain: "3 of 4"},
		{name: "planner busy", o: with(func(o *Observed) { o.Steady = false }), step: Wait, report: true, reason: etcdv1beta2.ReasonAuthEnabling},
		{name: "not formed", o: with(func(o *Observed) { o.Formed, o.AuthKnown, o.Healthy = false, false, 0 }), step: Wait, report: true,
			reason: etcdv1beta2.ReasonAuthEnabling, msgContain: "form"},
		{name: "auth state unknown", o: with(func(o *Observed) { o.AuthKnown = false }), step: Wait, report: true, reason: etcdv1beta2.ReasonAuthEnabling},
		{name: "secret missing", o: with(func(o *Observed) { o.SecretError = errors.New(`not found`) }), step: None, report: true,
			reason: etcdv1beta2.ReasonAuthSecretError, msgContain: "a-etcd-root: not found"},
		{name: "secret beats a down member", o: with(func(o *Observed) { o.SecretError = errors.New("no key"); o.Healthy = 1 }), step: None, report: true,
			reason: etcdv1beta2.ReasonAuthSecretError},
		{name: "password rejected", o: with(func(o *Observed) { o.Rejected, o.AuthOn = true, true }), step: None, report: true,
			reason: etcdv1beta2.ReasonAuthRejected, msgContain: `"password"`},
		{name: "invalid annotation", o: with(func(o *Observed) { o.SpecError = errors.New("annotation x: bad") }), step: None, report: true,
			reason: etcdv1beta2.ReasonInvalidSpec, msgContain: "annotation x"},
		{name: "spec dropped, still on", o: with(func(o *Observed) { o.Wanted, o.WasOn, o.AuthOn = false, true, true }), step: None, report: true, status: true,
			reason: etcdv1beta2.ReasonAuthEnabled, msgContain: "stays on"},
		{name: "spec dropped, etcd silent", o: with(func(o *Observed) { o.Wanted, o.WasOn, o.AuthKnown = false, true, false }), step: None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.o)
			if d.Step != tc.step || d.Report != tc.report {
				t.Fatalf("Decide = step %v report %v (%+v); want step %v report %v", d.Step, d.Report, d.Condition, tc.step, tc.report)
			}
			if !tc.report {
				return
			}
			c := d.Condition
			if c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msgContain) || c.Message == "" {
				t.Fatalf("condition = %+v; want status %v reason %s message containing %q", c, tc.status, tc.reason, tc.msgContain)
			}
		})
	}
}
