// Package e2e checks the bench itself: that the control plane, the emulated kubelet and
// the namespace plumbing together behave like a cluster an operator can be tested on.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/kubelet"
)

func TestMain(m *testing.M) {
	// The kubelet starts containers by re-executing this binary: that must win over
	// everything else. Then move into the bench's private mount+net namespaces (the
	// parent waits there and exits with the child's code).
	kubelet.MaybeRunShim()
	if err := bench.EnterNamespace(); err != nil {
		fmt.Fprintln(os.Stderr, "bench namespace:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
