// Package pinsign vouches for a restore pin: the operator signs, when its own
// verification of a backup object passes, the facts that identify exactly what passed,
// and checks that signature again before it lets a restore skip the snapshot checks.
//
// The signature is an HMAC-SHA256 keyed with a secret only the operator holds (see
// internal/pinkey). Everything a tenant can edit (an EtcdCluster's restore annotation, an
// EtcdBackup's or EtcdRestore's status) may carry the signature, but none of it can
// produce one: changing any fact it covers, or moving it to another namespace, backup or
// object, makes it fail to verify, and a restore then simply runs the checks again.
package pinsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// Facts are what a signature vouches for: that the object Key in the storage named by
// Bucket and Endpoint (S3) or Claim (a PVC), whose bytes have SHA-256 SHA256 and hold
// etcd revision Revision, passed the verification of EtcdBackup Backup (with UID
// BackupUID) in Namespace.
type Facts struct {
	Namespace string
	Backup    string
	BackupUID string
	Bucket    string
	Endpoint  string
	Claim     string
	Key       string
	SHA256    string
	Revision  int64
}

// domain separates these signatures from any other use of the same key. Version 1
// signed what a verification pod reported, which a tenant can forge (see
// controllers/etcdbackup/verify_pin.go); no v1 signature verifies any more.
const domain = "etcd-operator restore pin v2"

// encode is the canonical encoding of f: the domain and each field, in a fixed order,
// prefixed with its length, so no two different Facts encode alike (a field's content
// can never be read as the start of the next one). The SHA-256 is compared as hex
// without case, so it is encoded lower-case.
func encode(f Facts) []byte {
	return encodeFields(f.Revision, domain, f.Namespace, f.Backup, f.BackupUID, f.Bucket, f.Endpoint,
		f.Claim, f.Key, strings.ToLower(f.SHA256))
}

// encodeFields writes each field prefixed with its length, then n: the one encoding
// both kinds of signature use.
func encodeFields(n int64, fields ...string) []byte {
	var b []byte
	for _, s := range fields {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

// Sign is the signature of f under key, as hex; "" without a key (nothing is vouched for).
func Sign(key []byte, f Facts) string {
	if len(key) == 0 {
		return ""
	}
	return hex.EncodeToString(mac(key, f))
}

// Verify says whether sig is Sign(key, f). Without a key nothing verifies; a signature
// that is not hex of the right length simply does not verify.
func Verify(key []byte, f Facts, sig string) bool {
	if len(key) == 0 || sig == "" {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, mac(key, f)) // constant time
}

func mac(key []byte, f Facts) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(encode(f))
	return h.Sum(nil)
}
