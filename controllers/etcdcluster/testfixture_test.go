package etcdcluster

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// newTestClusterReconciler is the cluster reconciler as SetupWithManager wires it, over
// the client c and the clock now, without a manager.
func newTestClusterReconciler(t *testing.T, c client.Client, rec record.EventRecorder, now func() time.Time) *Reconciler {
	t.Helper()
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	return &Reconciler{Client: c, Scheme: c.Scheme(), Recorder: rec, Now: now,
		renderer: rd, health: newHealthTracker(), events: newEventMemo(), backoff: newStepBackoff(), OperatorImage: "op:test", S3Access: testS3Access}
}
