package planner

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRulesNamedNotNumbered keeps cross-references to the rules by name: a rule's
// number is its place in the package doc's list, which moves whenever a rule is added,
// and numbers written elsewhere drifted before. The doc's own list keeps its numbers as
// positions only; no Go file or Markdown page of the module says "rule" and a number.
func TestRulesNamedNotNumbered(t *testing.T) {
	numbered := regexp.MustCompile(`(?i)\brules? \d+`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := numbered.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: call a planner rule by its name (internal/planner/doc.go), not its number", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
