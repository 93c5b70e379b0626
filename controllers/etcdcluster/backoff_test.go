package etcdcluster

import "testing"

func TestBackoffDelay(t *testing.T) {
	for n, want := range map[int]string{1: "2s", 2: "4s", 3: "8s", 6: "1m4s", 7: "2m0s", 8: "2m0s", 1000: "2m0s"} {
		if got := backoffDelay(n).String(); got != want {
			t.Errorf("backoffDelay(%d) = %s, want %s", n, got, want)
		}
	}
}
