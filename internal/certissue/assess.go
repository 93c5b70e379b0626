package certissue

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// WarnWithin is how long before expiry a certificate nobody renews is reported: the
// CertificatesValid condition's warning.
const WarnWithin = 30 * 24 * time.Hour

// InUse is one certificate a cluster runs on, as read from its Secret.
type InUse struct {
	Kind   Kind
	Secret string
	// CertKey and CAKey name the Secret's keys, for messages.
	CertKey, CAKey string
	Cert, Bundle   []byte
	// Hosts the certificate must be valid for (member hosts for peer and server).
	Hosts []string
}

// Verdict is the worst that Assess found.
type Verdict int

const (
	Valid Verdict = iota
	ExpiringSoon
	Mismatched
	Expired
)

// Assessment is what a cluster's certificates are worth now.
type Assessment struct {
	Verdict Verdict
	Message string
	// Expiry is the earliest NotAfter by kind (KindCA: of the CA bundles' certificates).
	Expiry map[Kind]time.Time
}

// Assess judges the certificates a cluster runs on: Expired when one has expired (or is
// not valid yet), Mismatched when one does not parse, is not signed by the bundle beside
// it or does not name a host it must, ExpiringSoon when one expires within warnWithin.
// The message names every problem found, by Secret and key, worst first.
func Assess(items []InUse, now time.Time, warnWithin time.Duration) Assessment {
	a := Assessment{Expiry: map[Kind]time.Time{}}
	type problem struct {
		v   Verdict
		msg string
	}
	var problems []problem
	note := func(v Verdict, format string, args ...any) {
		problems = append(problems, problem{v, fmt.Sprintf(format, args...)})
	}
	earliest := func(k Kind, t time.Time) {
		if cur, ok := a.Expiry[k]; !ok || t.Before(cur) {
			a.Expiry[k] = t
		}
	}
	for _, it := range items {
		where := fmt.Sprintf("secret %q (%s)", it.Secret, it.CertKey)
		cert, err := ParseCert(it.Cert)
		if err != nil {
			note(Mismatched, "%s: %v", where, err)
			continue
		}
		earliest(it.Kind, cert.NotAfter)
		cas, err := ParseBundle(it.Bundle)
		if err != nil {
			note(Mismatched, "secret %q (%s): %v", it.Secret, it.CAKey, err)
		}
		for _, ca := range cas {
			earliest(KindCA, ca.NotAfter)
			if now.After(ca.NotAfter) {
				note(Expired, "secret %q (%s): a CA expired at %s", it.Secret, it.CAKey, ca.NotAfter.UTC().Format(time.RFC3339))
			}
		}
		switch {
		case now.After(cert.NotAfter):
			note(Expired, "%s expired at %s", where, cert.NotAfter.UTC().Format(time.RFC3339))
			continue
		case now.Before(cert.NotBefore):
			note(Expired, "%s is not valid before %s", where, cert.NotBefore.UTC().Format(time.RFC3339))
			continue
		}
		if len(cas) > 0 {
			if err := VerifyChain(it.Kind, it.Cert, it.Bundle, now); err != nil {
				note(Mismatched, "%s is not signed by a CA of %s", where, it.CAKey)
			}
		}
		var unnamed []string
		for _, h := range it.Hosts {
			if cert.VerifyHostname(h) != nil {
				unnamed = append(unnamed, h)
			}
		}
		if len(unnamed) > 0 {
			note(Mismatched, "%s does not name %s", where, strings.Join(unnamed, ", "))
		}
		if left := cert.NotAfter.Sub(now); left < warnWithin {
			note(ExpiringSoon, "%s expires at %s", where, cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].v > problems[j].v })
	var msgs []string
	for _, p := range problems {
		if p.v > a.Verdict {
			a.Verdict = p.v
		}
		msgs = append(msgs, p.msg)
	}
	a.Message = strings.Join(msgs, "; ")
	if a.Verdict == Valid {
		a.Message = fmt.Sprintf("%d certificates valid; the first expires at %s", len(items), firstExpiry(a.Expiry).UTC().Format(time.RFC3339))
	}
	return a
}

func firstExpiry(m map[Kind]time.Time) time.Time {
	var first time.Time
	for _, t := range m {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}
