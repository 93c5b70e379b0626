package runtest

import (
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

func TestMain(m *testing.M) {
	// A pod's network namespace is set up by this binary re-executed (podnet_test.go);
	// it must not start tests.
	if os.Getenv(envPodChild) != "" {
		runPodChild()
	}
	bench.RunTestMain(m)
}
