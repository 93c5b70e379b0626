package main

import (
	"strings"
	"testing"
)

func TestParseClientServiceTypes(t *testing.T) {
	got, err := parseClientServiceTypes(stringList{"NodePort", "ClusterIP", "LoadBalancer"})
	if err != nil || len(got) != 2 || got[0] != "NodePort" || got[1] != "LoadBalancer" {
		t.Errorf("got %v, %v: want NodePort and LoadBalancer (ClusterIP is always allowed)", got, err)
	}
	for _, bad := range []string{"ExternalName", "nodeport", "Ingress"} {
		if _, err := parseClientServiceTypes(stringList{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSoftMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      int64
		wantError bool
	}{
		{"the shipped 256Mi limit", map[string]string{"MEMORY_LIMIT": "268435456"}, 241591911, false},
		{"GOMEMLIMIT wins", map[string]string{"MEMORY_LIMIT": "268435456", "GOMEMLIMIT": "200MiB"}, 0, false},
		{"GOMEMLIMIT=off wins too", map[string]string{"MEMORY_LIMIT": "268435456", "GOMEMLIMIT": "off"}, 0, false},
		{"no limit given", nil, 0, false},
		{"a huge limit does not overflow", map[string]string{"MEMORY_LIMIT": "9223372036854775807"}, 9223372036854775807 - 922337203685477580, false},
		{"a quantity, not bytes", map[string]string{"MEMORY_LIMIT": "256Mi"}, 0, true},
		{"zero", map[string]string{"MEMORY_LIMIT": "0"}, 0, true},
		{"negative", map[string]string{"MEMORY_LIMIT": "-1"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := softMemoryLimit(func(k string) string { return tc.env[k] })
			if got != tc.want || (err != nil) != tc.wantError {
				t.Errorf("got %d, %v; want %d, error %v", got, err, tc.want, tc.wantError)
			}
			if err != nil && !strings.Contains(err.Error(), "MEMORY_LIMIT") {
				t.Errorf("error %q does not name MEMORY_LIMIT", err)
			}
		})
	}
}

// TestClusterWorkersBelowOneRefused: --cluster-workers=0 would start a controller that
// never reconciles; the operator refuses to start instead (exit 2, before it contacts
// the API server).
func TestClusterWorkersBelowOneRefused(t *testing.T) {
	for _, v := range []string{"0", "-3"} {
		if code := runManager([]string{"--cluster-workers=" + v}); code != 2 {
			t.Errorf("--cluster-workers=%s: exit %d, want 2", v, code)
		}
	}
}
