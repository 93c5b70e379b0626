package pinsign

import (
	"encoding/hex"
)

// The replaced-cluster record: what an EtcdRestore that replaces a cluster writes on
// itself before the delete (the cluster's name and UID, its etcd auth annotations and
// the root Secret kept for the new cluster). The new cluster takes its auth from it, so
// the record is signed: whoever may write EtcdRestores can put any record there, and
// without the signature a restore that replaces nothing could give the cluster it
// creates auth with any Secret.

// replacedDomain separates these signatures from the pins' and the markers'.
const replacedDomain = "etcd-operator replaced cluster v1"

// SignReplaced is the signature of record (the annotation's text, without the
// signature) for the EtcdRestore of UID restoreUID, as hex; "" without a key or a UID.
// The UID binds it to that one restore: a record copied onto another is not vouched for.
func SignReplaced(key []byte, restoreUID, record string) string {
	if len(key) == 0 || restoreUID == "" {
		return ""
	}
	return hex.EncodeToString(macBytes(key, encodeFields(0, replacedDomain, restoreUID, record)))
}

// VerifyReplaced says whether sig is SignReplaced(key, restoreUID, record). Without a
// key nothing verifies.
func VerifyReplaced(key []byte, restoreUID, record, sig string) bool {
	return signedAs(SignReplaced(key, restoreUID, record), sig)
}
