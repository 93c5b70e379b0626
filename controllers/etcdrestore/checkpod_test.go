package etcdrestore

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// runCheckPods plays the kubelet for the snapshot check pods that have not run.
func (f *restoreFixture) runCheckPods(t *testing.T) int {
	t.Helper()
	return fixture.RunSnapshotCheckPods(t, f.c, f.r.S3Access, f.r.OperatorImage)
}
