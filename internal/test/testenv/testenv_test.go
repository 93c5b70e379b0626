package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMissingSkipsOutsideCIAndFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "")
	if got := ending(func(tb testing.TB) { Missing(tb, "no %s", "tool") }); got != "skip" {
		t.Errorf("without CI: %s, want skip", got)
	}
	t.Setenv("CI", "true")
	if got := ending(func(tb testing.TB) { Missing(tb, "no %s", "tool") }); got != "fatal" {
		t.Errorf("under CI: %s, want fatal", got)
	}
}

func TestRequireFindsCachedToolsAndEndsOtherwise(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("ETCD_OPERATOR_CACHE", cache)
	t.Setenv("CI", "true")
	want := filepath.Join(cache, "etcd-v0.0.1", "etcd")
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	var got string
	if end := ending(func(tb testing.TB) { got = Etcd(tb, "v0.0.1") }); end != "" || got != want {
		t.Errorf("cached etcd: path %q, end %q; want %q and no end", got, end, want)
	}
	if end := ending(func(tb testing.TB) { Etcd(tb, "v0.0.2") }); end != "fatal" {
		t.Errorf("etcd not cached, under CI: %q, want fatal", end)
	}
}

// ending runs f with a testing.TB that records how f ended the test: "skip", "fatal", or
// "" when f returned.
func ending(f func(testing.TB)) (end string) {
	tb := &recorder{}
	defer func() {
		if r := recover(); r != nil && r != errEnded {
			panic(r)
		}
		end = tb.end
	}()
	f(tb)
	return ""
}

type recorder struct {
	testing.TB // nil: any other method panics
	end        string
}

type ended struct{}

var errEnded = ended{}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.end = "skip"; panic(errEnded) }
func (r *recorder) Fatalf(string, ...any) { r.end = "fatal"; panic(errEnded) }
