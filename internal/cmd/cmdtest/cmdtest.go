// Package cmdtest checks, for tests of the in-pod programs (internal/cmd/...), that a
// program's flags have one definition: the Args the operator renders parse back into the
// Options they were rendered from.
package cmdtest

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/inpod"
)

// Program is what RoundTrip needs of one program (or one step of it).
type Program[O any] struct {
	// Args renders Options as the operator does; Skip is how many leading arguments
	// name the program or step rather than flags.
	Args func(O) []string
	Skip int
	// Parse reads flags (after the skipped arguments) into Options; Flags is a flag set
	// holding every flag the program defines.
	Parse func([]string) (O, error)
	Flags *flag.FlagSet
	// Defaults is what Parse makes of no flags at all.
	Defaults O
	// Full sets every field, none to its default.
	Full O
}

// Parser is Program.Parse for a program whose flags are defined by flags: it parses
// as the program's Run does (inpod.ParseOptions), its one-line report as the error.
func Parser[O any](flags func(*O) *flag.FlagSet) func([]string) (O, error) {
	return func(args []string) (O, error) {
		var w strings.Builder
		o, ok := inpod.ParseOptions(&w, flags, args)
		if !ok {
			return o, errors.New(w.String())
		}
		return o, nil
	}
}

// ResultFile is a program's result file as the kubelet makes it: existing and empty
// (inpod.WriteResult writes only into a file that exists).
func ResultFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "result")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReadResult reads the reason and error of the JSON result a program wrote to path.
func ReadResult(t *testing.T, path string) (reason, msg string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Reason, Error string }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("result %q: %v", b, err)
	}
	return got.Reason, got.Error
}

// RoundTrip checks p: no flags parse to Defaults, and so do the rendered zero Options
// and rendered Defaults; Full sets every field (a field added to Options fails here until
// the test sets it), renders every flag once, and parses back to itself.
func RoundTrip[O any](t *testing.T, p Program[O]) {
	t.Helper()
	parse := func(what string, args []string) O {
		t.Helper()
		o, err := p.Parse(args)
		if err != nil {
			t.Fatalf("%s: parse %q: %v", what, args, err)
		}
		return o
	}
	if got := parse("no flags", nil); !reflect.DeepEqual(got, p.Defaults) {
		t.Errorf("no flags parse to\n%+v\nwant the defaults\n%+v", got, p.Defaults)
	}
	var zero O
	for what, o := range map[string]O{"zero Options": zero, "the defaults": p.Defaults} {
		args := p.Args(o)
		if len(args) < p.Skip {
			t.Fatalf("%s render %q: fewer than %d leading arguments", what, args, p.Skip)
		}
		if got := parse(what, args[p.Skip:]); !reflect.DeepEqual(got, p.Defaults) {
			t.Errorf("%s render %q, which parse to\n%+v\nwant the defaults\n%+v", what, args, got, p.Defaults)
		}
	}
	eachField(t, "Options", reflect.ValueOf(p.Full), reflect.ValueOf(p.Defaults))
	args := p.Args(p.Full)
	if len(args) < p.Skip {
		t.Fatalf("Full renders %q: fewer than %d leading arguments", args, p.Skip)
	}
	if got := parse("Full", args[p.Skip:]); !reflect.DeepEqual(got, p.Full) {
		t.Errorf("Full renders %q, which parse to\n%+v\nwant\n%+v", args, got, p.Full)
	}
	seen := map[string]int{}
	for _, a := range args[p.Skip:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		seen[name]++
	}
	p.Flags.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("Full renders --%s %d times, want once: %q", f.Name, seen[f.Name], args)
		}
	})
	var names []string
	p.Flags.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for name := range seen {
		if !slices.Contains(names, name) {
			t.Errorf("Args renders --%s, which the program does not define", name)
		}
	}
}

// eachField fails for every field of full (recursing into structs) that is zero or
// equal to its default.
func eachField(t *testing.T, path string, full, def reflect.Value) {
	t.Helper()
	if full.Kind() == reflect.Struct {
		for i := range full.NumField() {
			eachField(t, path+"."+full.Type().Field(i).Name, full.Field(i), def.Field(i))
		}
		return
	}
	if full.IsZero() || reflect.DeepEqual(full.Interface(), def.Interface()) {
		t.Errorf("Full's %s is %v, its zero value or default: set every field so that each flag is checked", path, full.Interface())
	}
}
