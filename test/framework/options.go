package framework

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

// SetupWithOptions is Setup with bench options, e.g. ExtraImages mapping the operator's
// image to a freshly built binary so pods that run it (the restore init container) work.
// Scheme is always the framework's; Dir defaults as in Setup (E2E_KEEP_DIR).
func SetupWithOptions(t testing.TB, opts bench.Options) *Env {
	t.Helper()
	s := NewScheme()
	opts.Scheme = s
	if d := os.Getenv("E2E_KEEP_DIR"); d != "" && opts.Dir == "" {
		// Short: the bench directory is part of unix socket paths (see bench.pathsFor).
		opts.Dir = filepath.Join(d, bench.ShortName(t.Name()))
	}
	b := bench.NewForTest(t, opts)
	e := &Env{t: t, Bench: b, C: b.Client(), scheme: s}
	setGlobalLog() // else InstallCRDs' log line prints a stack trace saying no logger was set
	if _, err := envtest.InstallCRDs(b.RestConfig(), envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(RepoRoot(t), "config", "crd", "bases")},
		ErrorIfPathMissing: true,
		Scheme:             s,
	}); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	e.StartOperator()
	t.Cleanup(e.StopOperatorNow)
	return e
}
