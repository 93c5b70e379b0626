package main

import "testing"

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
