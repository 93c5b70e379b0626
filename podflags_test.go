package main

import (
	"strings"
	"testing"
	"time"
)

// A bad flag of an in-pod program is reported as one line naming the flag, without the
// usage banner that crowded the cause out of the pod's termination message.
func TestPodFlagErrorIsOneLineNamingTheFlag(t *testing.T) {
	fs := podFlagSet("backup")
	fs.Duration("max-age", 0, "keep backups this long")
	fs.Duration("timeout", time.Minute, "give up after this long")
	var out strings.Builder
	if parsePodFlags(&out, fs, []string{"--timeout=1m", "--max-age=forever"}) {
		t.Fatal("a bad duration was accepted")
	}
	got := out.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "max-age") || strings.Contains(got, "Usage") || strings.Contains(got, "give up") {
		t.Errorf("report %q: want one line naming -max-age, no usage banner", got)
	}
	out.Reset()
	if !parsePodFlags(&out, fs, []string{"--max-age=1h"}) || out.Len() != 0 {
		t.Errorf("good flags: reported %q", out.String())
	}
}

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
