// Package benchmark measures the operator on the local bench against baselines measured
// in the same run, and reports ratios (never absolute timing asserts). Run with
// `make benchmark`.
package benchmark

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

func TestMain(m *testing.M) { bench.RunTestMain(m) }
