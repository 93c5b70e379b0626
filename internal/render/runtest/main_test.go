package runtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

func TestMain(m *testing.M) {
	// Outside the namespaces this re-executes the test binary inside them and exits
	// with its status; inside it sets up /etc/hosts and lo and returns.
	if err := bench.EnterNamespace(); err != nil {
		fmt.Fprintf(os.Stderr, "runtest: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
