package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// The bench's StorageClass and provisioner (test/bench/provisioner.go).
const (
	benchStorageClass = "bench-local"
	benchProvisioner  = "bench.etcd-operator.io/local"
)

// TestStorageRequestGrowth grows spec.pod.persistentVolumeClaimSpec's storage request on
// two running clusters: one whose claims' StorageClass allows volume expansion gets its
// claims' requests raised and SpecApplied=False ClaimsExpanding; one on the bench's
// default class (no allowVolumeExpansion) keeps its claims as they are and says
// ExpansionNotAllowed, naming the class. The bench's local volumes cannot really grow (no
// resizer serves its provisioner), so the first cluster's claims stay at their old
// capacity: the test checks the request and the report, not the file system.
func TestStorageRequestGrowth(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()

	const expandable = "e2e-expandable"
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: expandable}, Provisioner: benchProvisioner,
		VolumeBindingMode: &mode, AllowVolumeExpansion: ptr.To(true)}
	if err := e.C.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.C.Delete(context.Background(), sc) })

	withClaims := func(name, class string) *etcdv1beta2.EtcdCluster {
		c := newCluster(name, 1)
		c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		return c
	}
	const grows, fixed = "grows", "fixed"
	e.Create(withClaims(grows, expandable))
	e.Create(withClaims(fixed, benchStorageClass))
	e.WaitAvailable(grows, 1, 120*time.Second)
	e.WaitAvailable(fixed, 1, 120*time.Second)
	for _, n := range []string{grows, fixed} {
		waitCondition(e, n, etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionTrue, etcdv1beta2.ReasonSpecApplied, 30*time.Second)
		e.Update(n, func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Pod.PersistentVolumeClaimSpec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		})
	}

	waitCondition(e, grows, etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionFalse, etcdv1beta2.ReasonClaimsExpanding,
		30*time.Second, "of 1 claims at 2Gi")
	waitCondition(e, fixed, etcdv1beta2.ClusterConditionSpecApplied, corev1.ConditionFalse, etcdv1beta2.ReasonExpansionNotAllowed,
		30*time.Second, `StorageClass "`+benchStorageClass+`" does not allow volume expansion`)

	requests := func(cluster string) map[string]string {
		var l corev1.PersistentVolumeClaimList
		if err := e.C.List(ctx, &l, client.InNamespace("default"), client.MatchingLabels(render.ClusterLabels(cluster))); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range l.Items {
			q := p.Spec.Resources.Requests[corev1.ResourceStorage]
			out[p.Name] = q.String()
		}
		return out
	}
	// One claim each (size 1): an empty list would pass the checks below vacuously.
	for _, n := range []string{grows, fixed} {
		if got := requests(n); len(got) != 1 {
			t.Fatalf("%s has claims %v, want one", n, got)
		}
	}
	for pvc, q := range requests(grows) {
		if q != "2Gi" {
			t.Errorf("claim %s of %s requests %s, want 2Gi", pvc, grows, q)
		}
	}
	for pvc, q := range requests(fixed) {
		if q != "1Gi" {
			t.Errorf("claim %s of %s requests %s, want 1Gi (its class does not allow expansion)", pvc, fixed, q)
		}
	}
	// Both clusters keep running: the storage step never touches the members.
	e.WaitAvailable(grows, 1, 30*time.Second)
	e.WaitAvailable(fixed, 1, 30*time.Second)
}
