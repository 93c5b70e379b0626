// Package etcdauth decides the next step of turning on etcd's user authentication for a
// cluster with spec.auth, and the AuthEnabled condition that reports it. It is pure: the
// controller observes (the spec, the root Secret, what etcd says of auth and of its
// members), calls Decide, and does the step.
//
// Auth is turned on once, by the operator, with a root user whose password is in the root
// Secret: only while the cluster has formed, every member is reachable and healthy and
// the planner has nothing else to do, so that no member misses the change while it is
// down and no other step runs beside it. The operator's client carries the root
// credentials from the start (etcd ignores them while auth is off), so nothing the
// operator does is interrupted when auth comes on. Turning auth off is not offered.
package etcdauth

import (
	"fmt"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// Step is what the controller does next.
type Step int

const (
	// None: nothing to do (auth not wanted, on already, or a failure to report).
	None Step = iota
	// Wait: auth is wanted but the cluster is not ready for it; observe again later.
	Wait
	// Enable: create the root user and role and turn auth on.
	Enable
)

func (s Step) String() string {
	switch s {
	case Wait:
		return "Wait"
	case Enable:
		return "Enable"
	}
	return "None"
}

// Observed is what the controller found.
type Observed struct {
	// Wanted: the spec asks for auth (v1 spec.auth, v1beta2 annotation); WasOn: the
	// AuthEnabled condition is True already (auth stays on when the spec drops it).
	Wanted, WasOn bool
	// SpecError: the auth annotations are invalid (v1beta2.ValidateAuth).
	SpecError error
	// RootSecret names the root Secret; SecretError says why it cannot be used.
	RootSecret  string
	SecretError error
	// Rejected: etcd refused the root user's password (the Secret's is not root's).
	Rejected bool
	// AuthKnown: etcd answered whether auth is on (AuthOn).
	AuthKnown, AuthOn bool
	// Formed: the cluster has formed and answered a member list with a quorum.
	Formed bool
	// Size is the desired number of members; Healthy the voting members that answered
	// (Reachable) in this observation; Members all listed members, learners included.
	Size, Healthy, Members int
	// Steady: the planner had nothing else to do (its Done).
	Steady bool
}

// Condition is AuthEnabled as the decision reports it.
type Condition struct {
	Status          bool
	Reason, Message string
}

// Decision is the step and the condition; Report false: no condition (auth was never
// asked for).
type Decision struct {
	Step      Step
	Report    bool
	Condition Condition
}

// Decide returns the next step given what was observed.
func Decide(o Observed) Decision {
	fail := func(step Step, reason, format string, args ...any) Decision {
		return Decision{Step: step, Report: true, Condition: Condition{Reason: reason, Message: fmt.Sprintf(format, args...)}}
	}
	switch {
	case o.SpecError != nil:
		return fail(None, etcdv1beta2.ReasonInvalidSpec, "%v", o.SpecError)
	case !o.Wanted && !o.WasOn:
		return Decision{}
	case o.SecretError != nil:
		return fail(None, etcdv1beta2.ReasonAuthSecretError, "root Secret %s: %v", o.RootSecret, o.SecretError)
	case o.Rejected:
		return fail(None, etcdv1beta2.ReasonAuthRejected,
			"etcd refused the root user's password from Secret %s: its key %q must hold root's password (change it with etcdctl user passwd root, or put root's password in the Secret)",
			o.RootSecret, etcdv1beta2.AuthPasswordKey)
	case o.AuthKnown && o.AuthOn && !o.Wanted:
		return Decision{Report: true, Condition: Condition{Status: true, Reason: etcdv1beta2.ReasonAuthEnabled,
			Message: "etcd authentication stays on: the operator does not turn it off (spec.auth was removed); the operator keeps using the root user from Secret " + o.RootSecret}}
	case o.AuthKnown && o.AuthOn:
		return Decision{Report: true, Condition: Condition{Status: true, Reason: etcdv1beta2.ReasonAuthEnabled,
			Message: "etcd authentication is on; the operator uses the root user, whose password is in Secret " + o.RootSecret}}
	case !o.Wanted:
		// Was on, and etcd does not say so now (no answer, or turned off by hand): the
		// operator keeps its credentials and does not turn it on again unasked.
		return Decision{}
	case !o.Formed || !o.AuthKnown:
		return fail(Wait, etcdv1beta2.ReasonAuthEnabling, "waiting for the cluster to form and answer before turning etcd authentication on")
	case o.Healthy < o.Size || o.Members > o.Healthy:
		return fail(Wait, etcdv1beta2.ReasonAuthMembersUnhealthy,
			"etcd authentication is turned on only while every member is healthy: %d of %d members answer", o.Healthy, max(o.Size, o.Members))
	case !o.Steady:
		return fail(Wait, etcdv1beta2.ReasonAuthEnabling, "etcd authentication is turned on once the cluster has no other step to take (scaling, upgrade, repair)")
	}
	return fail(Enable, etcdv1beta2.ReasonAuthEnabling, "creating the root user and turning etcd authentication on")
}
