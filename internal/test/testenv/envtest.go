package testenv

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/test/onsignal"
)

// StartEnvtest starts env (envtest's etcd and kube-apiserver) and stops it when the test
// ends. A start that fails part way is stopped too: envtest's Start returns without
// stopping what it started, and the test's Fatal would leave the processes running and
// their directories (k8s_test_framework_*, envtest-serving-certs-*) in the temp dir. A
// failed stop is logged, not failed: the processes are killed and the directories
// removed all the same. A signal that ends the test process (a CI job cancelled,
// Ctrl-C) runs no cleanup: env is stopped by the process's signal handler then.
func StartEnvtest(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	unregister := onsignal.Register(func(os.Signal) { _ = env.Stop() })
	cfg, err := env.Start()
	if err != nil {
		if serr := env.Stop(); serr != nil {
			t.Logf("stop the envtest that failed to start: %v", serr)
		}
		unregister()
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stop envtest: %v", err)
		}
		unregister()
	})
	return cfg
}
