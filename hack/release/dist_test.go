package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (slash paths relative to dir) with their contents.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// release writes a release-shaped directory: the marker, files and a SHA256SUMS over them.
func release(t *testing.T, dir string) {
	t.Helper()
	writeTree(t, dir, map[string]string{MarkerFile: "etcd-operator 1.0.0\n", "install.yaml": "a\n",
		"images/index.json": "{}", "images/blobs/sha256/ab": "x", "bundle/manifests/csv.yaml": "c\n"})
	if err := WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
}

// TestCheckReplaceable: make release replaces only nothing, an empty directory, or a
// release it wrote holding nothing SHA256SUMS leaves out; anything else (a directory of
// someone's files, one with just a SHA256SUMS, a release with a file added) is refused
// with an error naming DIST.
func TestCheckReplaceable(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dist string)
		// refused is a substring of the error; "" means replaceable.
		refused string
	}{
		{"missing", func(t *testing.T, dist string) {}, ""},
		{"empty directory", func(t *testing.T, dist string) { os.Mkdir(dist, 0o755) }, ""},
		{"a release", release, ""},
		{"a file", func(t *testing.T, dist string) {
			writeTree(t, filepath.Dir(dist), map[string]string{filepath.Base(dist): "x"})
		}, "is not a directory"},
		{"someone's files", func(t *testing.T, dist string) { writeTree(t, dist, map[string]string{"thesis.tex": "x"}) }, "has no " + MarkerFile},
		{"downloads with a SHA256SUMS", func(t *testing.T, dist string) {
			writeTree(t, dist, map[string]string{"iso": "x"})
			if err := WriteChecksums(dist); err != nil {
				t.Fatal(err)
			}
		}, "has no " + MarkerFile},
		{"a marker but no SHA256SUMS", func(t *testing.T, dist string) {
			writeTree(t, dist, map[string]string{MarkerFile: "x", "notes": "y"})
		}, "no readable SHA256SUMS"},
		{"a marker SHA256SUMS does not list", func(t *testing.T, dist string) {
			writeTree(t, dist, map[string]string{"a": "x"})
			if err := WriteChecksums(dist); err != nil {
				t.Fatal(err)
			}
			writeTree(t, dist, map[string]string{MarkerFile: "x"})
		}, "does not list " + MarkerFile},
		{"a release with a file added", func(t *testing.T, dist string) {
			release(t, dist)
			writeTree(t, dist, map[string]string{"images/notes.txt": "mine"})
		}, "holds images/notes.txt"},
		{"a release with a directory added", func(t *testing.T, dist string) {
			release(t, dist)
			if err := os.Mkdir(filepath.Join(dist, "work"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "holds the directory work"},
		{"a release with a listed file turned symlink", func(t *testing.T, dist string) {
			release(t, dist)
			p := filepath.Join(dist, "install.yaml")
			os.Remove(p)
			if err := os.Symlink("/etc/passwd", p); err != nil {
				t.Fatal(err)
			}
		}, "holds install.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dist := filepath.Join(t.TempDir(), "1.0.0")
			c.setup(t, dist)
			err := CheckReplaceable(dist)
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "DIST="+dist)):
				t.Fatalf("err %v, want one naming DIST=%s and %q", err, dist, c.refused)
			}
		})
	}
	for _, d := range []string{"", ".", "/", "dist/.."} {
		if err := CheckReplaceable(d); err == nil {
			t.Errorf("DIST=%q accepted", d)
		}
	}
}

// TestBeginFinish: the release is built beside DIST and replaces it whole; a DIST that
// stops being replaceable during the build is kept, and so is an incomplete build.
func TestBeginFinish(t *testing.T) {
	parent := t.TempDir()
	dist := filepath.Join(parent, "sub", "1.0.0")
	build := func() string {
		t.Helper()
		tmp, err := Begin(dist)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(tmp) != filepath.Dir(dist) || !strings.HasPrefix(filepath.Base(tmp), "1.0.0.tmp.") {
			t.Fatalf("Begin built in %s, want %s.tmp.* beside it", tmp, dist)
		}
		release(t, tmp)
		return tmp
	}
	// Into a missing DIST (and a missing parent), then over the release there.
	for i := 0; i < 2; i++ {
		tmp := build()
		writeTree(t, tmp, map[string]string{"install.yaml": "run " + string(rune('0'+i)) + "\n"})
		if err := WriteChecksums(tmp); err != nil {
			t.Fatal(err)
		}
		if err := Finish(tmp, dist); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(dist, "install.yaml")); string(got) != "run "+string(rune('0'+i))+"\n" {
			t.Fatalf("run %d: DIST's install.yaml is %q", i, got)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(dist)); len(entries) != 1 {
		t.Fatalf("beside DIST after two releases: %v, want DIST only", entries)
	}

	// Someone's file appears in DIST during the build: the release is not moved there.
	tmp := build()
	writeTree(t, dist, map[string]string{"mine": "x"})
	if err := Finish(tmp, dist); err == nil || !strings.Contains(err.Error(), "holds mine") {
		t.Fatalf("Finish over a DIST with a file added: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dist, "mine")); err != nil {
		t.Fatal("the file added to DIST is gone")
	}
	os.Remove(filepath.Join(dist, "mine"))

	// A build missing a listed file (it failed half way) does not replace the release.
	os.Remove(filepath.Join(tmp, "install.yaml"))
	if err := Finish(tmp, dist); err == nil {
		t.Fatal("Finish moved an incomplete release onto DIST")
	}
	if got, _ := os.ReadFile(filepath.Join(dist, "install.yaml")); string(got) != "run 1\n" {
		t.Fatalf("DIST's install.yaml is %q after a refused Finish", got)
	}
	// Begin refuses up front what Finish would.
	writeTree(t, dist, map[string]string{"mine": "x"})
	if _, err := Begin(dist); err == nil {
		t.Fatal("Begin accepted a DIST holding someone's file")
	}
}
