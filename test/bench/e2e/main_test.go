// Package e2e checks the bench itself: that the control plane, the real nodes and the
// namespace plumbing together behave like a cluster an operator can be tested on.
package e2e

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

func TestMain(m *testing.M) { bench.RunTestMain(m) }
