package kubelet

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The kubelet starts containers by re-executing this test binary as the shim.
	MaybeRunShim()
	os.Exit(m.Run())
}
