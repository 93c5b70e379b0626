package pinsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Marker steps: what a signed member-pod marker says the pod is.
const (
	// StepRecovery: the first member of a quorum-loss recovery (a new one-member cluster
	// seeded from a survivor's data).
	StepRecovery = "recovery"
	// StepRestore: the one member a total-loss restore from backup bootstraps.
	StepRestore = "restore"
)

// MarkerFacts are what the operator signs on a member pod it created for a step whose
// completion or abandonment deletes pods: the pod (by name and UID, which the API server
// assigns on create, so the signature is written after the pod exists and can never be
// moved to another pod, even one re-created under the same name), the cluster it belongs
// to (by UID), the step, the step's token (the new cluster's --initial-cluster-token)
// and when the step was decided (Unix seconds).
//
// A tenant can copy the annotation, the labels and the ownerReference onto a pod of
// their own, or put a token onto a real member's pod, but cannot produce the signature:
// the key is in the operator's namespace (internal/pinkey).
type MarkerFacts struct {
	ClusterUID string
	Pod        string
	PodUID     string
	Step       string
	Token      string
	StartedAt  int64
}

// markerDomain separates these signatures from the restore pins' (and any other use of
// the same key).
const markerDomain = "etcd-operator member marker v1"

func encodeMarker(f MarkerFacts) []byte {
	return encodeFields(f.StartedAt, markerDomain, f.ClusterUID, f.Pod, f.PodUID, f.Step, f.Token)
}

// SignMarker is the signature of f under key, as hex; "" without a key, or without a
// pod UID or token (facts that identify nothing are never vouched for).
func SignMarker(key []byte, f MarkerFacts) string {
	if len(key) == 0 || f.PodUID == "" || f.Token == "" || f.ClusterUID == "" {
		return ""
	}
	return hex.EncodeToString(macBytes(key, encodeMarker(f)))
}

// VerifyMarker says whether sig is SignMarker(key, f). Without a key nothing verifies.
func VerifyMarker(key []byte, f MarkerFacts, sig string) bool {
	return signedAs(SignMarker(key, f), sig)
}

// signedAs says whether sig is the signature want (hex; "" signs nothing), compared in
// constant time.
func signedAs(want, sig string) bool {
	if want == "" || sig == "" {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	w, _ := hex.DecodeString(want)
	return hmac.Equal(got, w) // constant time
}

func macBytes(key, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil)
}
