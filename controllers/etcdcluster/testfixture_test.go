package etcdcluster

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// newTestReconciler is NewReconciler(settings), as SetupWithManager builds it, without a
// manager.
func newTestReconciler(t *testing.T, settings Reconciler) *Reconciler {
	t.Helper()
	r, err := NewReconciler(settings)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newTestClusterReconciler is the cluster reconciler over the client c and the clock now,
// with the test signing key and S3 access.
func newTestClusterReconciler(t *testing.T, c client.Client, rec record.EventRecorder, now func() time.Time) *Reconciler {
	t.Helper()
	return newTestReconciler(t, Reconciler{Client: c, Scheme: c.Scheme(), Recorder: rec, Now: now,
		OperatorImage: "op:test", PinKey: testPinKey, S3Access: testS3Access})
}

// testPinKey is the operator's signing key in tests (internal/pinkey in production).
var testPinKey = bytes.Repeat([]byte{0x5a}, 32)

// signedFor signs p's recovery or restore marker as the operator does right after
// creating it (act_marker.go), for the step c's status records for p; p needs a UID.
func signedFor(t *testing.T, c *etcdv1beta2.EtcdCluster, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	f, ok := markerFacts(c, p)
	if !ok || p.UID == "" {
		t.Fatalf("pod %s: no step recorded for it, or no UID", p.Name)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[render.AnnotationRecoveryToken] = f.Token
	p.Annotations[render.AnnotationMarkerSignature] = pinsign.SignMarker(testPinKey, f)
	return p
}

// drain returns the events recorded so far, oldest first, and leaves none.
func drain(rec *record.FakeRecorder) []string { return fixture.DrainEvents(rec) }
