package planner

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"3.7.3", "3.7.3", true},
		{"v3.7.3", "3.7.3", true},
		{" 3.6.16 ", "3.6.16", true},
		{"3.7.0-rc.1", "3.7.0-rc.1", true},
		{"3.7.0+build5", "3.7.0", true},
		{"3.7", "", false},
		{"3.7.3.1", "", false},
		{"latest", "", false},
		{"", "", false},
		{"3.07.1", "", false},
		{"3.-1.1", "", false},
		{"3.7.0-", "", false},
		{"a.b.c", "", false},
	} {
		v, err := ParseVersion(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseVersion(%q) error = %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if c.ok && v.String() != c.want {
			t.Errorf("ParseVersion(%q) = %s, want %s", c.in, v, c.want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	order := []string{"3.5.21", "3.6.0-alpha.0", "3.6.0-rc.1", "3.6.0", "3.6.16", "3.7.0", "3.7.3", "3.10.0", "4.0.0"}
	for i := range order {
		for j := range order {
			a, _ := ParseVersion(order[i])
			b, _ := ParseVersion(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestCheckSkew(t *testing.T) {
	for _, c := range []struct {
		cur, to string
		errHas  string // "" = allowed
	}{
		{"3.6.16", "3.7.3", ""},
		{"3.7.3", "3.7.3", ""},
		{"3.7.3", "3.7.4", ""},
		{"3.7.3", "3.7.2", ""}, // patch downgrade is fine
		{"3.6.16", "3.6.0", ""},
		{"3.7.0-rc.1", "3.7.0", ""},
		{"3.5.21", "3.7.3", "skips a minor"},
		// etcd's upgrade guide: 3.5.32+ before 3.6, 3.6.11+ before 3.7.
		{"3.5.32", "3.6.16", ""},
		{"3.5.36", "3.6.0", ""},
		{"3.5.31", "3.6.16", "3.5.32 or later"},
		{"3.5.0", "3.6.16", "3.5.32 or later"},
		{"3.5.32-rc.0", "3.6.16", "3.5.32 or later"},
		{"3.5.20", "3.5.36", ""}, // the patch step that gets there
		{"3.6.11", "3.7.3", ""},
		{"3.6.10", "3.7.3", "3.6.11 or later"},
		{"3.6.10", "3.6.16", ""},
		{"3.7.0", "3.8.0", ""}, // no rule known for 3.7 -> 3.8
		{"3.4.0", "3.7.3", "skips a minor"},
		{"3.7.3", "3.6.16", "downgrade"},
		{"3.7.3", "4.0.0", "major"},
		{"4.0.0", "3.7.3", "major"},
	} {
		cur, _ := ParseVersion(c.cur)
		to, _ := ParseVersion(c.to)
		err := CheckSkew(cur, to)
		switch {
		case c.errHas == "" && err != nil:
			t.Errorf("%s -> %s refused: %v", c.cur, c.to, err)
		case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
			t.Errorf("%s -> %s: error %v, want one mentioning %q", c.cur, c.to, err, c.errHas)
		}
	}
}

func TestCheckUpgradeUsesEveryMember(t *testing.T) {
	o := cluster(3)
	mem(&o, 3).Version, pod(&o, mname(3)).Version = "3.5.21", "3.5.21"
	d := desired(3)
	if err := CheckUpgrade(d, o); err == nil || !strings.Contains(err.Error(), mname(3)) {
		t.Fatalf("want refusal naming %s, got %v", mname(3), err)
	}
	mem(&o, 3).Version = "" // falls back to the pod's image version
	if err := CheckUpgrade(d, o); err == nil {
		t.Fatal("pod version not used when the member reports none")
	}
	d.Version = "nope"
	if err := CheckUpgrade(d, cluster(3)); err == nil {
		t.Fatal("invalid target accepted")
	}
}

func TestNewMemberNames(t *testing.T) {
	a := NewMemberNames("demo", "s1", 5, nil)
	b := NewMemberNames("demo", "s1", 5, nil)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatal("not deterministic")
	}
	c := NewMemberNames("demo", "s2", 5, nil)
	if a[0] == c[0] {
		t.Error("seed does not change names")
	}
	seen := map[string]bool{}
	for _, n := range a {
		if seen[n] || !strings.HasPrefix(n, "demo-") || len(n) != len("demo-")+nameSuffixLen {
			t.Errorf("bad or duplicate name %q", n)
		}
		seen[n] = true
	}
	avoid := map[string]bool{a[0]: true, a[1]: true}
	d := NewMemberNames("demo", "s1", 2, avoid)
	for _, n := range d {
		if avoid[n] {
			t.Errorf("returned avoided name %q", n)
		}
	}
	long := NewMemberNames(strings.Repeat("x", 80), "s", 1, nil)[0]
	if len(long) > 63 {
		t.Errorf("name %q longer than a DNS label", long)
	}
	if n := NewMemberNames("Upper-", "s", 1, nil)[0]; n != strings.ToLower(n) {
		t.Errorf("name %q not lowercase", n)
	}
}

func TestCheckSupported(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{"3.5.0", true},
		{"3.5.21", true},
		{"v3.6.16", true},
		{"3.7.3", true},
		{"3.10.0", true},
		{"4.0.0", true},
		{"3.5.0-rc.1", true},
		{"3.4.37", false},
		{"3.2.13", false}, // CoreOS's default version
		{"v3.3.25", false},
		{"2.3.8", false},
		{"latest", false},
	} {
		err := CheckSupported(c.v)
		if (err == nil) != c.ok {
			t.Errorf("CheckSupported(%q) = %v, want ok=%v", c.v, err, c.ok)
		}
		if err != nil && c.ok == false && !strings.Contains(err.Error(), MinSupportedVersion) && c.v != "latest" {
			t.Errorf("CheckSupported(%q) = %q, want the minimum %s named", c.v, err, MinSupportedVersion)
		}
	}
}
