package pinsign

import "testing"

// A replaced-cluster record verifies only with its key, for its restore, as written.
func TestSignReplaced(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	rec := `{"name":"prod","uid":"u1","auth":{"etcd.database.coreos.com/auth":"enabled"}}`
	sig := SignReplaced(key, "restore-uid", rec)
	if sig == "" || !VerifyReplaced(key, "restore-uid", rec, sig) {
		t.Fatalf("own signature %q does not verify", sig)
	}
	for _, tc := range []struct {
		name             string
		key              []byte
		uid, record, sig string
	}{
		{"another key", []byte("another key of thirty-two bytes!"), "restore-uid", rec, sig},
		{"another restore", key, "other-uid", rec, sig},
		{"record changed", key, "restore-uid", rec[:len(rec)-2] + `,"x":"y"}}`, sig},
		{"no signature", key, "restore-uid", rec, ""},
		{"not hex", key, "restore-uid", rec, "zz"},
		{"no key", nil, "restore-uid", rec, sig},
		{"a marker's signature", key, "restore-uid", rec, SignMarker(key, MarkerFacts{ClusterUID: "c", Pod: "p", PodUID: "restore-uid", Step: "s", Token: rec})},
	} {
		if VerifyReplaced(tc.key, tc.uid, tc.record, tc.sig) {
			t.Errorf("%s: verifies", tc.name)
		}
	}
	if SignReplaced(nil, "restore-uid", rec) != "" || SignReplaced(key, "", rec) != "" {
		t.Error("signed without a key or a restore UID")
	}
}
