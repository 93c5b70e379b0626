package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The rollout rule's TLS part. A pod running on other TLS Secrets than the spec names (Drift.TLS,
// read off its volumes) is rolled out like any other change only the new pod gets, but
// only when the change is a rotation, and a proven one:
//   - rotation: the pod uses peer TLS and client TLS exactly as the spec wants, only
//     through other Secrets. Rolled out by the rollout rule (followers first, the leader last
//     after MoveLeader, the health gate between members, never below quorum), once the
//     controller proved that old and new certificates trust each other both ways
//     (Observed.TLSRefused empty), since members on both run side by side meanwhile.
//   - plaintext to TLS (both Secrets set on members running without): turned on in
//     steps (tlsenable.go) where that can be done safely, else refused.
//   - anything else changes a scheme: TLS to plaintext, or peer TLS without client TLS
//     and the reverse. A new pod would advertise URLs its peers and clients cannot
//     use, so the rollout rule restarts nothing and says why (TLSChangeRefused).
//
// A refusal holds every restart of the rollout rule, not only the TLS one: any new pod would be
// rendered with the spec's TLS and take the refused change up.

// TLSRefusal is why the pending change of the members' TLS is not rolled out, "" when
// there is none or it is a proven rotation. The controller shows it in SpecApplied.
func TLSRefusal(d Desired, o Observed) string {
	var enable, disable, mixed []string
	rotate := false
	for i := range o.Pods {
		p := &o.Pods[i]
		if p.Deleting || !p.Drift.TLS {
			continue
		}
		switch {
		case p.PeerTLS == d.PeerTLS && p.ClientTLS == d.ClientTLS:
			rotate = true
		case !p.PeerTLS && !p.ClientTLS:
			enable = append(enable, p.Name)
		case (p.PeerTLS && !d.PeerTLS) || (p.ClientTLS && !d.ClientTLS):
			disable = append(disable, p.Name)
		default:
			mixed = append(mixed, p.Name)
		}
	}
	switch {
	case len(disable) > 0:
		return fmt.Sprintf("turning TLS off on a running cluster is refused: %s run with TLS, and peers and clients that rely on it would be moved to plaintext; no member is restarted until spec.TLS names the Secrets the members run on",
			podList(disable))
	case len(enable) > 0:
		return tlsEnableRefusal(d, o, enable) // tlsenable.go
	case len(mixed) > 0:
		return fmt.Sprintf("adding peer TLS to members with client TLS only, or client TLS to members with peer TLS only, is not supported on a running cluster: %s; no member is restarted until spec.TLS names the Secrets the members run on",
			podList(mixed))
	case rotate && o.TLSRefused != "":
		return "rotating the TLS Secrets is not safe: " + o.TLSRefused + "; no member is restarted until the Secrets verify (a new CA needs a bundle holding the old and the new CA)"
	}
	return ""
}

// podList names pods for a message, sorted.
func podList(names []string) string {
	sort.Strings(names)
	if len(names) == 1 {
		return "pod " + names[0]
	}
	return "pods " + strings.Join(names, ", ")
}

// tlsGate holds the rollout rule while the members' TLS change is refused.
func (v *view) tlsGate() (Action, bool) {
	if msg := TLSRefusal(v.d, v.o); msg != "" {
		return wait(v1beta2.ReasonTLSChangeRefused, msg, requeueLong), true
	}
	return Action{}, false
}

// tlsHeld: a refused TLS change holds every rollout restart.
func (v *view) tlsHeld() bool { return TLSRefusal(v.d, v.o) != "" }
