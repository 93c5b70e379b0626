package etcdbackup

import (
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
)

// pinSignature signs a passed verification of eb (pinsign.BackupFacts), or is "" when
// there is nothing to vouch for: no SHA-256 was reported (a verification pod of an older
// operator) or the operator has no key (then no pin is ever trusted; main logs that
// once).
func (r *Reconciler) pinSignature(eb *etcdv1beta2.EtcdBackup, v *verifyOutcomeResult) string {
	if v.SHA256 == "" || v.Key == "" {
		return ""
	}
	return pinsign.Sign(r.PinKey, pinsign.BackupFacts(eb, v.Key, v.SHA256, v.Revision))
}

// unsignedNote is added to the Verified condition of a pass the operator could not sign
// for lack of its key, where the user looks for the pass: restores of it run the
// snapshot checks again.
func (r *Reconciler) unsignedNote() string {
	if len(r.PinKey) > 0 {
		return ""
	}
	return "; not signed (the operator has no restore pin key, see its log), so restores of it run the snapshot checks again"
}
