package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/onsignal"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// NewForTest starts a bench for t and stops it in t.Cleanup, whatever the outcome.
// Missing cached binaries skip the test, unless CI is set: there they fail it (see
// testenv.Missing). On
// failure the bench directory (logs of every process) is kept and its path logged.
// The test binary's TestMain must have called EnterNamespace (see RunTestMain).
func NewForTest(t testing.TB, opts Options) *Bench {
	t.Helper()
	if missing := MissingBinaries(); len(missing) > 0 {
		testenv.Missing(t, "%v", &MissingBinariesError{Paths: missing})
	}
	if !InNamespace() {
		t.Fatal("bench: TestMain must call bench.EnterNamespace() (bench.RunTestMain does)")
	}
	keep := opts.Dir != ""
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "bench-"+ShortName(t.Name())+"-")
		if err != nil {
			t.Fatal(err)
		}
		opts.Dir = d
	}
	if opts.Log == nil {
		opts.Log = t.Logf
	}
	// Three minutes to start, after waiting for inotify room (see reserveInotify).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+inotifyWaitBudget)
	defer cancel()
	b, err := Start(ctx, opts)
	if err != nil {
		var mb *MissingBinariesError
		if errors.As(err, &mb) {
			testenv.Missing(t, "bench start: %v", err)
		}
		t.Logf("bench logs kept in %s", opts.Dir)
		t.Fatalf("bench start: %v", err)
	}
	b.testDir.Store(!keep)
	t.Cleanup(func() {
		b.Stop()
		// A mount left under the directory (a volume, a container's root) would make
		// RemoveAll delete what it shows.
		if mps, err := mountPoints(opts.Dir); err != nil || len(mps) > 0 {
			t.Errorf("bench: mounts left under %s (%v): %v; directory kept", opts.Dir, err, mps)
			return
		}
		if t.Failed() || keep {
			t.Logf("bench dir kept: %s", opts.Dir)
			return
		}
		os.RemoveAll(opts.Dir)
	})
	return b
}

// ShortName is a test name made fit for a directory name of a bench: the bench directory
// is part of unix socket paths, which are limited to 107 bytes.
func ShortName(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '/' || r == filepath.Separator || r == ' ' {
			r = '_'
		}
		out = append(out, r)
	}
	// The bench directory is part of unix socket paths (see pathsFor).
	if len(out) > 24 {
		out = out[:24]
	}
	return string(out)
}

// RunTestMain is the TestMain of every test package that starts benches: the binary moves
// into the bench's private mount+net namespaces (the parent waits there and exits with
// the child's code).
func RunTestMain(m *testing.M) {
	if err := EnterNamespace(); err != nil {
		fmt.Fprintln(os.Stderr, "bench namespace:", err)
		os.Exit(1)
	}
	// A test binary told to stop (Ctrl-C, a killed `go test`) powers its nodes off first:
	// containerd's shims and the containers would otherwise outlive it.
	onsignal.Register(func(s os.Signal) {
		if b := running.Load(); b != nil {
			fmt.Fprintf(os.Stderr, "bench: %v: stopping the bench in %s\n", s, b.dir)
			b.Stop()
			if b.testDir.Load() && !b.hasMounts() {
				os.RemoveAll(b.dir)
			}
		}
	})
	os.Exit(m.Run())
}
