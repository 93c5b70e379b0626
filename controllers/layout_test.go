package controllers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/etcd-operator/etcd-operator"

// controllerPackages are the one-controller packages: none may import another; what two
// of them share lives below them (internal/..., api/...).
var controllerPackages = []string{
	module + "/controllers/etcdcluster",
	module + "/controllers/etcdbackup",
	module + "/controllers/etcdrestore",
}

// programPackages are the programs the operator binary runs in pods, one package each
// (internal/cmd/...): the root package only dispatches to them, each has a test (its
// flags round-trip), and none imports another; what they share is internal/cmd/inpod.
var programPackages = []string{
	module + "/internal/cmd/restore",
	module + "/internal/cmd/backup",
	module + "/internal/cmd/verify",
	module + "/internal/cmd/snapshotcheck",
}

// listedPackage is what `go list -json` says of a package.
type listedPackage struct {
	ImportPath   string
	GoFiles      []string
	Deps         []string // transitive, without tests
	TestGoFiles  []string
	TestImports  []string
	XTestImports []string
}

// listPackages lists every package of the module with its dependencies.
func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,GoFiles,Deps,TestGoFiles,TestImports,XTestImports", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// imports is everything p's code and tests depend on: its transitive dependencies and
// the packages its tests import directly.
func (p listedPackage) imports() []string {
	return slices.Concat(p.Deps, p.TestImports, p.XTestImports)
}

// TestLayout keeps the import graph pointing down: no controller package imports
// another, and nothing under internal/ imports controllers/ (which would make the
// shared pieces depend on what shares them). The in-pod programs stay one package each
// (programPackages), tested, none importing another, and the root package holds only
// main.go.
func TestLayout(t *testing.T) {
	pkgs := listPackages(t)
	found := map[string]bool{}
	for _, p := range pkgs {
		found[p.ImportPath] = true
		if slices.Contains(programPackages, p.ImportPath) {
			if len(p.TestGoFiles) == 0 {
				t.Errorf("%s has no test: round-trip its flags (internal/cmd/cmdtest)", p.ImportPath)
			}
			for _, other := range programPackages {
				if other != p.ImportPath && slices.Contains(p.Deps, other) {
					t.Errorf("%s imports %s: what programs share belongs in internal/cmd/inpod", p.ImportPath, other)
				}
			}
		}
		if p.ImportPath == module && !slices.Equal(p.GoFiles, []string{"main.go"}) {
			t.Errorf("the root package holds %v: main.go only dispatches, each in-pod program is a package under internal/cmd", p.GoFiles)
		}
		switch {
		case slices.Contains(controllerPackages, p.ImportPath):
			for _, other := range controllerPackages {
				if other != p.ImportPath && slices.Contains(p.imports(), other) {
					t.Errorf("%s imports %s: move what they share down (internal/ or api/)", p.ImportPath, other)
				}
			}
		case strings.HasPrefix(p.ImportPath, module+"/internal/"):
			for _, d := range p.imports() {
				if d == module+"/controllers" || strings.HasPrefix(d, module+"/controllers/") {
					t.Errorf("%s imports %s: internal packages sit below the controllers", p.ImportPath, d)
				}
			}
		}
	}
	for _, c := range controllerPackages {
		if !found[c] {
			t.Errorf("package %s not found; keep controllerPackages up to date", c)
		}
	}
	for _, c := range programPackages {
		if !found[c] {
			t.Errorf("package %s not found; keep programPackages up to date", c)
		}
	}
}

// TestREADMELayoutListsEveryPackage keeps the README's layout table complete: every
// folder holding a Go package of the module is named there (in backquotes, as written
// from the repository root), so a newcomer can find what each one is for.
func TestREADMELayoutListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	for _, p := range listPackages(t) {
		dir := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if dir == "" {
			dir = "main.go"
		}
		if !strings.Contains(table, "`"+dir+"`") && !strings.Contains(table, "`"+dir+"/`") {
			t.Errorf("README.md's layout table does not name `%s`", dir)
		}
	}
}

// TestClusterControllerFileNames keeps controllers/etcdcluster on one naming scheme: a
// file belongs to a phase of the reconcile (observe_*, act_*, status_*), to what is kept
// across reconciles (memory_*), or to the wiring (controller.go, scope.go, shard.go, watch_*,
// metrics_*); a test file is named after the source it tests (its name, or its name and
// a suffix), or holds shared fixtures (testfixture_*).
func TestClusterControllerFileNames(t *testing.T) {
	const dir = "etcdcluster"
	scheme := regexp.MustCompile(`^(observe|act|status|memory|watch|metrics)(_[a-z0-9_]+)?\.go$`)
	wiring := map[string]bool{"controller.go": true, "scope.go": true, "shard.go": true}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	stems := map[string]bool{}
	var tests []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case !strings.HasSuffix(name, ".go"):
		case strings.HasSuffix(name, "_test.go"):
			tests = append(tests, name)
		case scheme.MatchString(name) || wiring[name]:
			stems[strings.TrimSuffix(name, ".go")] = true
		default:
			t.Errorf("%s/%s: name it observe_*, act_*, status_* or memory_* after the phase it belongs to", dir, name)
		}
	}
	for _, name := range tests {
		stem := strings.TrimSuffix(name, "_test.go")
		ok := strings.HasPrefix(stem, "testfixture")
		for s := stem; !ok && s != ""; {
			ok = stems[s]
			i := strings.LastIndex(s, "_")
			if i < 0 {
				break
			}
			s = s[:i]
		}
		if !ok {
			t.Errorf("%s/%s: no source file %s.go (or a shorter stem of it) beside it", dir, name, stem)
		}
	}
}

// TestREADMENamesRealTests keeps the README's proof honest: every test or benchmark it
// names as asserting a figure or a behaviour is a function of this repository (a renamed
// or deleted test would otherwise leave a claim that nothing checks).
func TestREADMENamesRealTests(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)").FindAllStringSubmatch(string(readme), -1)
	if len(named) == 0 {
		t.Fatal("README.md names no test at all")
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)
	out, err := exec.Command("git", "-C", "..", "ls-files", "*_test.go").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(out)) {
		src, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("README.md names %s, which no test file defines", m[1])
		}
	}
}

// TestREADMELayoutPathsExist keeps the README's layout section a map that leads
// somewhere: every path it names in backquotes (a folder or a file, written from the
// repository root) exists, so the section's paths from a question to the code (how a
// scheduled backup is taken, how a restore checks a snapshot) survive renames.
func TestREADMELayoutPathsExist(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := regexp.MustCompile("`([a-zA-Z0-9_.-]+(?:/[a-zA-Z0-9_.-]+)+/?)`").FindAllStringSubmatch(section, -1)
	if len(named) < 10 {
		t.Fatalf("the layout section names %d paths; the pattern no longer reads it", len(named))
	}
	for _, m := range named {
		if _, err := os.Stat("../" + m[1]); err != nil {
			t.Errorf("README.md's layout section names `%s`, which does not exist", m[1])
		}
	}
}
