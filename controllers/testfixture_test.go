package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// testScheme knows the built-in kinds and this operator's CRDs, for fake clients.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(etcdv1beta2.AddToScheme(s))
	return s
}

// newTestClusterReconciler is the cluster reconciler as SetupWithManager wires it, over
// the client c and the clock now, without a manager.
func newTestClusterReconciler(t *testing.T, c client.Client, rec record.EventRecorder, now func() time.Time) *EtcdClusterReconciler {
	t.Helper()
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	return &EtcdClusterReconciler{Client: c, Scheme: c.Scheme(), Recorder: rec, Now: now,
		renderer: rd, health: newHealthTracker(), events: newEventMemo(), backoff: newStepBackoff(), OperatorImage: "op:test"}
}
