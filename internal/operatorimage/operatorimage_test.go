package operatorimage

import "testing"

func TestOr(t *testing.T) {
	if got := Or(""); got != Default {
		t.Errorf("Or(\"\") = %q, want %q", got, Default)
	}
	if got := Or("op:1"); got != "op:1" {
		t.Errorf("Or(op:1) = %q", got)
	}
}
