package runtest

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/test/bench"
)

func TestMain(m *testing.M) { bench.RunTestMain(m) }
