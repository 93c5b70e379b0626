// Package e2e runs the operator against the local bench: a real kube-apiserver,
// kube-controller-manager and kube-scheduler, the emulated kubelet, and real etcd
// processes. The test binary re-executes itself inside the bench's private mount and
// network namespaces first.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/bench/kubelet"
)

func TestMain(m *testing.M) {
	kubelet.MaybeRunShim()
	if err := bench.EnterNamespace(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
