package clusterdns

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

func TestAbsoluteCompletesAsTheSearchPathDoes(t *testing.T) {
	for in, want := range map[string]string{
		"m1.c.ns.svc.cluster.local":  "m1.c.ns.svc.cluster.local",
		"m1.c.ns.svc.cluster.local.": "m1.c.ns.svc.cluster.local",
		"m1.c.ns.svc":                "m1.c.ns.svc.cluster.local",
		"m1.c.ns":                    "m1.c.ns.svc.cluster.local",
		"c.ns":                       "c.ns.svc.cluster.local",
		"10-0-0-1.ns.pod":            "10-0-0-1.ns.pod.cluster.local",
		"1.0.0.10.in-addr.arpa":      "1.0.0.10.in-addr.arpa",
		"cluster.local":              "cluster.local",
	} {
		if got := Absolute(in, "cluster.local"); got != want {
			t.Errorf("Absolute(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Absolute("m1.c.ns", "bench.example"); got != "m1.c.ns.svc.bench.example" {
		t.Errorf("other domain: %q", got)
	}
}

func zoneFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "db.*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

func TestWithholderWritesZonesAndRemovesThemAtTheDeadline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "withheld")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "db.old.svc.cluster.local")
	if err := os.WriteFile(stale, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := NewWithholder(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o755 {
		t.Errorf("dir mode %v, want 0755 (CoreDNS runs as non-root)", st.Mode().Perm())
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a zone left by an earlier process survived: %v", err)
	}

	start := time.Now()
	if err := w.Withhold("m1.c.ns.svc", start.Add(300*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Withhold("*.c2.ns", start.Add(time.Hour), map[string][]string{
		"m0.c2.ns.svc": {"10.0.0.20"}, "c2.ns.svc.cluster.local": {"10.0.0.20", "fd00::20"},
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := zoneFiles(t, dir), []string{"db.c2.ns.svc.cluster.local", "db.m1.c.ns.svc.cluster.local"}; !slices.Equal(got, want) {
		t.Fatalf("zone files %v, want %v", got, want)
	}
	if got := w.Withheld(); !slices.Equal(got, []string{"c2.ns.svc.cluster.local", "m1.c.ns.svc.cluster.local"}) {
		t.Errorf("Withheld() = %v", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "db.c2.ns.svc.cluster.local"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"$ORIGIN c2.ns.svc.cluster.local.",
		"m0.c2.ns.svc.cluster.local. IN A 10.0.0.20",
		"c2.ns.svc.cluster.local. IN AAAA fd00::20",
	} {
		if !strings.Contains(string(b), line+"\n") {
			t.Errorf("zone lacks %q:\n%s", line, b)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "db.c2.ns.svc.cluster.local")); st.Mode().Perm() != 0o644 {
		t.Errorf("zone file mode %v, want 0644", st.Mode().Perm())
	}

	poll.Eventually(t, 5*time.Second, 10*time.Millisecond, "the m1 zone to go at its deadline", func() error {
		if got := zoneFiles(t, dir); len(got) != 1 {
			return fmt.Errorf("zone files %v", got)
		}
		return nil
	})
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("removed after %v, before the deadline", took)
	}
	if got := w.Withheld(); !slices.Equal(got, []string{"c2.ns.svc.cluster.local"}) {
		t.Errorf("Withheld() = %v after the deadline", got)
	}

	// A new deadline replaces the old one: an hour becomes the past, i.e. now.
	if err := w.Withhold("*.c2.ns.svc.cluster.local.", start, nil); err != nil {
		t.Fatal(err)
	}
	if got := zoneFiles(t, dir); len(got) != 0 {
		t.Errorf("zone files %v after a deadline in the past", got)
	}

	if err := w.Withhold("m2.c.ns", time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Release("m2.c.ns.svc.cluster.local"); err != nil {
		t.Fatal(err)
	}
	if err := w.Withhold("m3.c.ns", time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := zoneFiles(t, dir); len(got) != 0 {
		t.Errorf("zone files %v after Release and Close", got)
	}
	if err := w.Withhold("m4.c.ns", time.Now().Add(time.Hour), nil); err == nil {
		t.Error("withheld after Close")
	}
}

func TestWithholdRefusesBadInput(t *testing.T) {
	w, err := NewWithholder(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	later := time.Now().Add(time.Hour)
	for name, call := range map[string]func() error{
		"empty":            func() error { return w.Withhold("", later, nil) },
		"slash":            func() error { return w.Withhold("a/b.c.ns", later, nil) },
		"empty label":      func() error { return w.Withhold("a..ns", later, nil) },
		"keep on a name":   func() error { return w.Withhold("m1.c.ns", later, map[string][]string{"m1.c.ns": {"10.0.0.1"}}) },
		"keep outside":     func() error { return w.Withhold("*.c.ns", later, map[string][]string{"m1.other.ns": {"10.0.0.1"}}) },
		"keep not address": func() error { return w.Withhold("*.c.ns", later, map[string][]string{"m1.c.ns": {"nope"}}) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	// A failed call leaves an earlier withholding of the same zone in place.
	if err := w.Withhold("*.c.ns", later, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Withhold("*.c.ns", later, map[string][]string{"m1.c.ns": {"nope"}}); err == nil {
		t.Fatal("bad keep accepted")
	}
	if got := w.Withheld(); !slices.Equal(got, []string{"c.ns.svc.cluster.local"}) {
		t.Errorf("Withheld() = %v after a failed re-withhold", got)
	}
	if got := zoneFiles(t, w.dir); !slices.Equal(got, []string{"db.c.ns.svc.cluster.local"}) {
		t.Errorf("zone files %v after a failed re-withhold", got)
	}
}
