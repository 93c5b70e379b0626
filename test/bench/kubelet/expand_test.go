package kubelet

import "testing"

func TestExpandVars(t *testing.T) {
	env := envLookup([]string{"POD_IP=127.1.0.2", "NAME=m1", "EMPTY=", "NAME=m2"})
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(POD_IP)", "127.1.0.2"},
		{"http://$(POD_IP):2379", "http://127.1.0.2:2379"},
		{"$(NAME)", "m2"}, // later definition wins
		{"$(NAME)-$(POD_IP)", "m2-127.1.0.2"},
		{"x$(EMPTY)y", "xy"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"a$(UNDEFINED)b$(NAME)", "a$(UNDEFINED)bm2"},
		{"$$(POD_IP)", "$(POD_IP)"},
		{"$$$(POD_IP)", "$127.1.0.2"},
		{"$$", "$"},
		{"$$$$", "$$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$NAME", "$NAME"},
		{"${NAME}", "${NAME}"},
		{"$(NAME", "$(NAME"},
		{"$(NAME $(POD_IP)", "$(NAME $(POD_IP)"},
		{"$()", "$()"},
		{"100$", "100$"},
	}
	for _, c := range cases {
		if got := expandVars(c.in, env); got != c.want {
			t.Errorf("expandVars(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
