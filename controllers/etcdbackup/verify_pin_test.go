package etcdbackup

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// A passed verification records the SHA-256 of the bytes it restored and the operator's
// signature over exactly that object of exactly this EtcdBackup (a failed one leaves
// them, as lastVerified*, untouched); without the operator's key nothing is signed.
func TestVerificationSignsThePin(t *testing.T) {
	sha := strings.Repeat("5a", 32)
	key := bytes.Repeat([]byte{3}, 32)
	for _, tc := range []struct {
		name    string
		key     []byte
		sha     string
		wantSig bool
	}{
		{name: "with the key", key: key, sha: sha, wantSig: true},
		{name: "without a key", sha: sha},
		{name: "no sha256 reported", key: key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := verifiedPVCBackup(t, "verify-pin-"+strings.ReplaceAll(tc.name, " ", "-"))
			h.r.PinKey = tc.key
			h.clock.Advance(20 * time.Second)
			h.endVerifyStep(render.VerifyCheckContainer, 0, string(restore.VerifyResult{Key: "etcd.db", Revision: 42, SHA256: tc.sha, ServedRevision: 42}.Encode()))
			h.reconcile()
			eb := h.backup()
			st := eb.Status
			if st.LastVerifiedSHA256 != tc.sha {
				t.Errorf("lastVerifiedSHA256 %q, want %q", st.LastVerifiedSHA256, tc.sha)
			}
			noKeyNote := strings.Contains(h.verified().Message, "no restore pin key")
			if noKeyNote != (tc.key == nil) {
				t.Errorf("Verified message %q; want it to say there is no key: %v", h.verified().Message, tc.key == nil)
			}
			if !tc.wantSig {
				if st.LastVerifiedPinSignature != "" {
					t.Errorf("signed %q", st.LastVerifiedPinSignature)
				}
				return
			}
			if !pinsign.Verify(key, pinsign.BackupFacts(eb, "etcd.db", sha, 42), st.LastVerifiedPinSignature) {
				t.Fatalf("signature %q does not verify for the verified object", st.LastVerifiedPinSignature)
			}
			f := pinsign.BackupFacts(eb, "etcd.db", sha, 42)
			if f.Claim != "claim" || f.Namespace != eb.Namespace || f.BackupUID == "" {
				t.Errorf("facts %+v", f)
			}

		})
	}
}
