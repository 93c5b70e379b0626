package certissue

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// Phase is where a CA rotation is (package doc).
type Phase string

const (
	PhaseSteady   Phase = ""
	PhaseTrusting Phase = "Trusting"
	PhaseSwitched Phase = "Switched"
)

// State is a cluster's CA as its Secret keeps it.
type State struct {
	// Generation of the leaves in effect (1, 2, ...).
	Generation int
	// CA signs the leaves of this generation.
	CA KeyPair
	// Next is the CA taking over while Phase is Trusting.
	Next *KeyPair
	// Trust is the CA bundle members and clients trust.
	Trust []byte
	Phase Phase
	// RotationToken is the last CA rotation request handled (the cluster's annotation).
	RotationToken string
	// Since is when the generation in effect was started (zero: not recorded, as by an
	// operator before the CA rotation's dwell; the dwell then counts as elapsed).
	Since time.Time
}

// ClientSecretName is the Secret the clients of a cluster with built-in issuing mount
// (keys etcd-client.crt, etcd-client.key, etcd-client-ca.crt), which the operator keeps
// on the generation in effect.
func ClientSecretName(cluster string) string { return cluster + "-builtin-tls-client" }

// Keys of the CA Secret.
const (
	StateCACert      = "ca.crt"
	StateCAKey       = "ca.key"
	StateNextCACert  = "next-ca.crt"
	StateNextCAKey   = "next-ca.key"
	StateTrust       = "trust.crt"
	StateGeneration  = "generation"
	StatePhase       = "phase"
	StateRotationTok = "rotation-token"
	StateSince       = "since"
)

// Encode is the State as the CA Secret's data.
func (s State) Encode() map[string][]byte {
	d := map[string][]byte{
		StateCACert:     s.CA.CertPEM,
		StateCAKey:      s.CA.KeyPEM,
		StateTrust:      s.Trust,
		StateGeneration: []byte(strconv.Itoa(s.Generation)),
		StatePhase:      []byte(s.Phase),
	}
	if s.Next != nil {
		d[StateNextCACert], d[StateNextCAKey] = s.Next.CertPEM, s.Next.KeyPEM
	}
	if s.RotationToken != "" {
		d[StateRotationTok] = []byte(s.RotationToken)
	}
	if !s.Since.IsZero() {
		d[StateSince] = []byte(s.Since.UTC().Format(time.RFC3339))
	}
	return d
}

// DecodeState reads the CA Secret's data; an error names the key at fault.
func DecodeState(d map[string][]byte) (State, error) {
	var s State
	g, err := strconv.Atoi(string(d[StateGeneration]))
	if err != nil || g < 1 {
		return s, fmt.Errorf("key %s is not a positive integer", StateGeneration)
	}
	s.Generation = g
	s.CA = KeyPair{CertPEM: d[StateCACert], KeyPEM: d[StateCAKey]}
	if _, _, err := parseKeyPair(s.CA); err != nil {
		return s, fmt.Errorf("keys %s/%s: %v", StateCACert, StateCAKey, err)
	}
	if len(d[StateNextCACert]) > 0 {
		n := KeyPair{CertPEM: d[StateNextCACert], KeyPEM: d[StateNextCAKey]}
		if _, _, err := parseKeyPair(n); err != nil {
			return s, fmt.Errorf("keys %s/%s: %v", StateNextCACert, StateNextCAKey, err)
		}
		s.Next = &n
	}
	s.Trust = d[StateTrust]
	if _, err := ParseBundle(s.Trust); err != nil {
		return s, fmt.Errorf("key %s: %v", StateTrust, err)
	}
	s.Phase = Phase(d[StatePhase])
	switch s.Phase {
	case PhaseSteady, PhaseSwitched:
	case PhaseTrusting:
		if s.Next == nil {
			return s, fmt.Errorf("phase %s without %s", s.Phase, StateNextCACert)
		}
	default:
		return s, fmt.Errorf("key %s: unknown phase %q", StatePhase, s.Phase)
	}
	s.RotationToken = string(d[StateRotationTok])
	if v := d[StateSince]; len(v) > 0 {
		t, err := time.Parse(time.RFC3339, string(v))
		if err != nil {
			return s, fmt.Errorf("key %s is not an RFC 3339 time", StateSince)
		}
		s.Since = t
	}
	return s, nil
}

// NewState is a fresh CA at generation 1.
func NewState(cluster string, st Settings, now time.Time) (State, error) {
	ca, err := NewCA(cluster+" etcd CA", st.CALifetime, now)
	if err != nil {
		return State{}, err
	}
	return State{Generation: 1, CA: ca, Trust: ca.CertPEM, Since: now}, nil
}

// Leaves are one generation's certificates, with the bundle they trust.
type Leaves struct {
	Peer, Server, Client KeyPair
	Trust                []byte
}

// IssueLeaves signs a generation's leaves from s.
func IssueLeaves(s State, n Names, st Settings, now time.Time) (Leaves, error) {
	l := Leaves{Trust: s.Trust}
	var err error
	for _, x := range []struct {
		kind Kind
		out  *KeyPair
	}{{KindPeer, &l.Peer}, {KindServer, &l.Server}, {KindClient, &l.Client}} {
		var dns []string
		var ips []net.IP
		if x.kind != KindClient {
			dns, ips = SANs(x.kind, n)
		}
		*x.out, err = Issue(s.CA, x.kind, fmt.Sprintf("%s %s", n.Cluster, x.kind), dns, ips, st.CertificateLifetime, now)
		if err != nil {
			return Leaves{}, err
		}
	}
	return l, nil
}

// Step is what Decide asks for.
type Step int

const (
	// Keep: nothing to do.
	Keep Step = iota
	// Renew: the next generation of leaves, from the same CA and bundle.
	Renew
	// BeginCARotation: a new CA, trusted beside the old, which still signs.
	BeginCARotation
	// SwitchCA: the new CA signs; both are still trusted.
	SwitchCA
	// DropOldCA: only the new CA is trusted.
	DropOldCA
)

func (s Step) String() string {
	return [...]string{"Keep", "Renew", "BeginCARotation", "SwitchCA", "DropOldCA"}[s]
}

// Observed is what the controller found of the generation in effect.
type Observed struct {
	// Leaves of the generation in effect, as read from their Secrets.
	Leaves Leaves
	// RolledOut: every member runs the generation in effect (none runs an older one).
	RolledOut bool
	// RotationToken is the cluster's CA rotation request ("" none).
	RotationToken string
}

// Decision is the step to take and why.
type Decision struct {
	Step   Step
	Reason string
}

// Decide is the next step for a cluster's certificates. A new generation is started
// only once every member runs the one in effect, and a CA rotation goes on before
// anything else, each of its later steps no sooner than st.CAStepDwell after the one
// before (the clients' Secret changed then; clients reread it in their own time).
func Decide(s State, o Observed, n Names, st Settings, now time.Time) Decision {
	if !o.RolledOut {
		return Decision{Keep, fmt.Sprintf("generation %d is rolling out", s.Generation)}
	}
	if s.Phase != PhaseSteady && !s.Since.IsZero() {
		if until := s.Since.Add(st.CAStepDwell); now.Before(until) {
			return Decision{Keep, fmt.Sprintf("CA rotation: clients have until %s to reread the clients' Secret of generation %d", until.UTC().Format(time.RFC3339), s.Generation)}
		}
	}
	switch s.Phase {
	case PhaseTrusting:
		return Decision{SwitchCA, "every member trusts the new CA: it signs from now on"}
	case PhaseSwitched:
		return Decision{DropOldCA, "every member runs certificates of the new CA: the old one is no longer trusted"}
	}
	caCert, err := ParseCert(s.CA.CertPEM)
	if err != nil {
		return Decision{BeginCARotation, "the CA certificate does not parse"}
	}
	if o.RotationToken != "" && o.RotationToken != s.RotationToken {
		return Decision{BeginCARotation, fmt.Sprintf("CA rotation %q requested", o.RotationToken)}
	}
	if due := caCert.NotAfter.Add(-st.CARenewBefore); !now.Before(due) {
		return Decision{BeginCARotation, fmt.Sprintf("the CA expires at %s", caCert.NotAfter.UTC().Format(time.RFC3339))}
	}
	for _, x := range []struct {
		kind Kind
		kp   KeyPair
	}{{KindPeer, o.Leaves.Peer}, {KindServer, o.Leaves.Server}, {KindClient, o.Leaves.Client}} {
		if why := leafDue(x.kind, x.kp, s, n, st, now); why != "" {
			return Decision{Renew, why}
		}
	}
	if !SameBundle(o.Leaves.Trust, s.Trust) {
		return Decision{Renew, "the generation's CA bundle is not the CA's"}
	}
	return Decision{Keep, ""}
}

// leafDue is why a leaf must be renewed, "" when it need not.
func leafDue(kind Kind, kp KeyPair, s State, n Names, st Settings, now time.Time) string {
	cert, err := ParseCert(kp.CertPEM)
	if err != nil {
		return fmt.Sprintf("the %s certificate does not parse", kind)
	}
	if due := cert.NotAfter.Add(-st.RenewBefore); !now.Before(due) {
		return fmt.Sprintf("the %s certificate expires at %s", kind, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	// A lifetime shortened in the spec applies at once, not when the old one runs out.
	if cert.NotAfter.Sub(cert.NotBefore) > st.CertificateLifetime+backdate+time.Minute {
		return fmt.Sprintf("the %s certificate lives longer than the lifetime asked for (%s)", kind, st.CertificateLifetime)
	}
	if err := Verify(kind, cert, s.CA.CertPEM, now); err != nil {
		return fmt.Sprintf("the %s certificate is not signed by the CA", kind)
	}
	if kind != KindClient {
		dns, ips := SANs(kind, n)
		if missing := Covers(cert, dns, ips); len(missing) > 0 {
			return fmt.Sprintf("the %s certificate does not name %v", kind, missing)
		}
	}
	return ""
}

// Apply is the State after step (a new generation for every step but Keep).
func Apply(s State, d Decision, cluster string, st Settings, token string, now time.Time) (State, error) {
	next := s
	switch d.Step {
	case Keep:
		return s, nil
	case Renew:
	case BeginCARotation:
		ca, err := NewCA(fmt.Sprintf("%s etcd CA %d", cluster, s.Generation+1), st.CALifetime, now)
		if err != nil {
			return s, err
		}
		trust, err := MergeBundle(s.Trust, ca.CertPEM)
		if err != nil {
			return s, err
		}
		next.Next, next.Trust, next.Phase = &ca, trust, PhaseTrusting
		if token != "" {
			next.RotationToken = token
		}
	case SwitchCA:
		if s.Next == nil {
			return s, fmt.Errorf("no new CA to switch to")
		}
		next.CA, next.Next, next.Phase = *s.Next, nil, PhaseSwitched
	case DropOldCA:
		next.Trust, next.Phase = s.CA.CertPEM, PhaseSteady
	}
	next.Generation, next.Since = s.Generation+1, now
	return next, nil
}

// NextDue is when Decide's answer for s and its generation's leaves l changes on its own
// (time passing, nothing else): the end of a CA rotation step's dwell, else the earliest
// of the CA's and the leaves' renewal times. The controller wakes then rather than on its
// periodic resync, so a step is taken when it is due, not up to a resync later. Zero when
// nothing is due (a leaf that does not parse is due now: Decide renews it).
func NextDue(s State, l Leaves, st Settings) time.Time {
	if s.Phase != PhaseSteady {
		if s.Since.IsZero() {
			return time.Time{}
		}
		return s.Since.Add(st.CAStepDwell)
	}
	var due time.Time
	earliest := func(t time.Time) {
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	if ca, err := ParseCert(s.CA.CertPEM); err == nil {
		earliest(ca.NotAfter.Add(-st.CARenewBefore))
	}
	for _, kp := range []KeyPair{l.Peer, l.Server, l.Client} {
		if cert, err := ParseCert(kp.CertPEM); err == nil {
			earliest(cert.NotAfter.Add(-st.RenewBefore))
		}
	}
	return due
}
