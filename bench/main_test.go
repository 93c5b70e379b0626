// Package benchmarks measures the operator on the local bench against baselines measured
// in the same run, and reports ratios (never absolute timing asserts). Run with
// `make bench`.
package benchmarks

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
