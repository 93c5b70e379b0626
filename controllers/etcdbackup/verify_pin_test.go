package etcdbackup

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// A passed verification records the SHA-256 of the bytes it restored but is never
// signed, with or without the operator's key: the report comes from a pod the tenant can
// imitate or alter, so no restore may skip its checks on the strength of it.
func TestVerificationIsNeverSigned(t *testing.T) {
	sha := strings.Repeat("5a", 32)
	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{name: "with the key", key: bytes.Repeat([]byte{3}, 32)},
		{name: "without a key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := verifiedPVCBackup(t, "verify-pin-"+strings.ReplaceAll(tc.name, " ", "-"))
			h.r.PinKey = tc.key
			h.clock.Advance(20 * time.Second)
			h.endVerifyStep(render.VerifyCheckContainer, 0, string(restore.CheckResult{Key: "etcd.db", Revision: 42, SHA256: sha, ServedRevision: 42}.Encode()))
			h.reconcile()
			st := h.backup().Status
			if st.LastVerifiedSHA256 != sha || st.LastVerifiedRevision != 42 {
				t.Errorf("lastVerified sha256 %q revision %d, want the pass recorded", st.LastVerifiedSHA256, st.LastVerifiedRevision)
			}
			if st.LastVerifiedPinSignature != "" {
				t.Errorf("signed %q", st.LastVerifiedPinSignature)
			}
			if h.verified().Status != "True" {
				t.Errorf("Verified %+v", h.verified())
			}
		})
	}
}
