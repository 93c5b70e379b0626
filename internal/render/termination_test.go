package render

import (
	"strings"
	"testing"
)

func TestLastMessageLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"one":                           "one",
		"first\nlast failure  \n\n":     "last failure",
		strings.Repeat("x", 600) + "\n": strings.Repeat("x", 512) + "...",
	} {
		if got := LastMessageLine(in); got != want {
			t.Errorf("LastMessageLine(%.20q) = %.20q, want %.20q", in, got, want)
		}
	}
}
