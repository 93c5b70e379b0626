package pinsign

import (
	"bytes"
	"testing"
)

func marked() MarkerFacts {
	return MarkerFacts{ClusterUID: "c-uid", Pod: "web-x1", PodUID: "p-uid", Step: StepRecovery, Token: "web-tok-rabc", StartedAt: 1764950000}
}

// A marker signature verifies for exactly the pod, cluster, step, token and time it was
// made for; any one of them changed (a tenant's pod of the same name, a restore marker
// taken for a recovery's, a replayed token) breaks it.
func TestVerifyMarker(t *testing.T) {
	sig := SignMarker(testKey, marked())
	if len(sig) != 64 {
		t.Fatalf("signature %q", sig)
	}
	for _, tc := range []struct {
		name string
		edit func(*MarkerFacts)
		key  []byte
		sig  string
		ok   bool
	}{
		{name: "the facts signed", ok: true},
		{name: "another cluster", edit: func(f *MarkerFacts) { f.ClusterUID = "c-uid2" }},
		{name: "another pod name", edit: func(f *MarkerFacts) { f.Pod = "web-x2" }},
		{name: "a pod re-created under the name", edit: func(f *MarkerFacts) { f.PodUID = "p-uid2" }},
		{name: "the other step", edit: func(f *MarkerFacts) { f.Step = StepRestore }},
		{name: "another token", edit: func(f *MarkerFacts) { f.Token = "web-tok-rabd" }},
		{name: "another start", edit: func(f *MarkerFacts) { f.StartedAt++ }},
		{name: "no pod uid", edit: func(f *MarkerFacts) { f.PodUID = "" }},
		{name: "another key", key: bytes.Repeat([]byte{8}, 32)},
		{name: "no key", key: []byte{}},
		{name: "no signature", sig: "-"},
		{name: "not hex", sig: "zz"},
		{name: "one bit flipped", sig: flipLast(sig)},
		{name: "a restore pin's signature", sig: Sign(testKey, signed())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := marked()
			if tc.edit != nil {
				tc.edit(&f)
			}
			key, s := testKey, sig
			if tc.key != nil {
				key = tc.key
			}
			if tc.sig == "-" {
				s = ""
			} else if tc.sig != "" {
				s = tc.sig
			}
			if got := VerifyMarker(key, f, s); got != tc.ok {
				t.Errorf("VerifyMarker = %v, want %v", got, tc.ok)
			}
		})
	}
	if SignMarker(nil, marked()) != "" {
		t.Error("signed without a key")
	}
}
