package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

func storageClass(name string, allow *bool) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "test", AllowVolumeExpansion: allow}
}

// sizedClaim is a bound claim of cluster c (owned by ownerUID) of class and size.
func sizedClaim(c *etcdv1beta2.EtcdCluster, name, class, size string, ownerUID types.UID) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: render.ClusterLabels(c.Name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster",
				Name: c.Name, UID: ownerUID, Controller: ptr.To(true)}}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}
	if class != "" {
		pvc.Spec.StorageClassName = ptr.To(class)
	}
	return pvc
}

func claimCluster(size string) *etcdv1beta2.EtcdCluster {
	c := statusCluster("store", "3.6.16")
	c.Spec.Size = 3
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
	return c
}

func storageFixture(t *testing.T, objs ...client.Object) (*Reconciler, client.Client, *record.FakeRecorder) {
	t.Helper()
	fc := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(objs...).Build()
	rec := record.NewFakeRecorder(20)
	return newTestClusterReconciler(t, fc, rec, time.Now), fc, rec
}

func getClaim(t *testing.T, c client.Client, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	return fixture.Get[corev1.PersistentVolumeClaim](t, c, name)
}

// Claims of a class that allows expansion are patched to the new size (recording the
// old one), claims of a class that does not are left and reported with the class named,
// and a claim another owner controls is never touched. A second pass patches nothing.
func TestReconcileStorageExpandsWhereAllowed(t *testing.T) {
	c := claimCluster("2Gi")
	r, fc, rec := storageFixture(t,
		storageClass("grow", ptr.To(true)), storageClass("fixed", ptr.To(false)), storageClass("unset", nil),
		sizedClaim(c, "store-a", "grow", "1Gi", c.UID),
		sizedClaim(c, "store-b", "fixed", "1Gi", c.UID),
		sizedClaim(c, "store-c", "unset", "1Gi", c.UID),
		sizedClaim(c, "store-x", "grow", "1Gi", "someone-else"),
	)
	before := map[string]string{}
	for _, n := range []string{"store-b", "store-c", "store-x"} {
		before[n] = getClaim(t, fc, n).ResourceVersion
	}
	rep := r.reconcileStorage(context.Background(), c)

	a := getClaim(t, fc, "store-a")
	if got := a.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
		t.Errorf("store-a request %s, want 2Gi", got.String())
	}
	if a.Annotations[AnnotationRequestedStorageAtCreation] != "1Gi" {
		t.Errorf("store-a annotations %v, want the size before expansion", a.Annotations)
	}
	for n, rv := range before {
		if got := getClaim(t, fc, n); got.ResourceVersion != rv {
			t.Errorf("%s was changed: %v", n, got.Spec.Resources.Requests)
		}
	}
	if rep == nil || rep.Settled || rep.Reason != etcdv1beta2.ReasonExpansionNotAllowed {
		t.Fatalf("report %+v, want %s", rep, etcdv1beta2.ReasonExpansionNotAllowed)
	}
	for _, m := range []string{`store-b cannot grow to 2Gi: StorageClass "fixed" does not allow volume expansion`,
		`store-c cannot grow to 2Gi: StorageClass "unset"`, "store-a: expansion requested"} {
		if !strings.Contains(rep.Message, m) {
			t.Errorf("message %q does not mention %q", rep.Message, m)
		}
	}
	if strings.Contains(rep.Message, "store-x") {
		t.Errorf("message %q mentions another owner's claim", rep.Message)
	}
	if ev := drain(rec); countContaining(ev, etcdv1beta2.EventReasonClaimExpanded+" claim store-a: storage request raised from 1Gi to 2Gi") != 1 {
		t.Errorf("events %v, want one %s", ev, etcdv1beta2.EventReasonClaimExpanded)
	}

	rv := getClaim(t, fc, "store-a").ResourceVersion
	r.reconcileStorage(context.Background(), c)
	if got := getClaim(t, fc, "store-a").ResourceVersion; got != rv {
		t.Errorf("a second pass patched store-a again")
	}
	if ev := drain(rec); len(ev) != 0 {
		t.Errorf("a second pass emitted %v", ev)
	}
}

// Progress is read off the claims: the request raised, then the resizer's conditions,
// then the capacity; at the size, the report is settled.
func TestReconcileStorageProgress(t *testing.T) {
	c := claimCluster("2Gi")
	r, fc, _ := storageFixture(t, storageClass("grow", ptr.To(true)),
		sizedClaim(c, "store-a", "grow", "1Gi", c.UID), sizedClaim(c, "store-b", "grow", "2Gi", c.UID))
	if rep := r.reconcileStorage(context.Background(), c); rep == nil || rep.Reason != etcdv1beta2.ReasonClaimsExpanding ||
		!strings.Contains(rep.Message, "1 of 2 claims at 2Gi") {
		t.Fatalf("report %+v", rep)
	}

	a := getClaim(t, fc, "store-a")
	a.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	if err := fc.Status().Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if rep := r.reconcileStorage(context.Background(), c); rep == nil || !strings.Contains(rep.Message, "1 of 2 claims at 2Gi; store-a: FileSystemResizePending") {
		t.Fatalf("report %+v", rep)
	}

	a = getClaim(t, fc, "store-a")
	a.Status.Conditions = nil
	a.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	if err := fc.Status().Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if rep := r.reconcileStorage(context.Background(), c); rep == nil || !rep.Settled {
		t.Fatalf("report %+v, want settled", rep)
	}
}

// Without a storage request in the spec nothing is read or judged.
func TestReconcileStorageWithoutClaims(t *testing.T) {
	c := statusCluster("store", "3.6.16")
	r, _, _ := storageFixture(t)
	if rep := r.reconcileStorage(context.Background(), c); rep != nil {
		t.Errorf("report %+v, want none", rep)
	}
}

// A cluster whose claims are at their size reads no StorageClass: an install whose role
// lacks the right keeps working.
func TestReconcileStorageAtSizeReadsNoClasses(t *testing.T) {
	c := claimCluster("1Gi")
	fc := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(sizedClaim(c, "store-a", "fixed", "1Gi", c.UID)).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*storagev1.StorageClassList); ok {
				t.Errorf("StorageClasses read for a cluster at its size")
			}
			return cl.List(ctx, list, opts...)
		}}).Build()
	r := newTestClusterReconciler(t, fc, record.NewFakeRecorder(5), time.Now)
	if rep := r.reconcileStorage(context.Background(), c); rep == nil || !rep.Settled {
		t.Errorf("report %+v, want settled", rep)
	}
}

// A patch the API server refuses is reported and retried on the next pass; it does not
// stop the other claims.
func TestReconcileStoragePatchRefused(t *testing.T) {
	c := claimCluster("2Gi")
	fc := fake.NewClientBuilder().WithScheme(fixture.Scheme()).
		WithObjects(storageClass("grow", ptr.To(true)), sizedClaim(c, "store-a", "grow", "1Gi", c.UID), sizedClaim(c, "store-b", "grow", "1Gi", c.UID)).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() == "store-a" {
				return errors.New("quota exceeded")
			}
			return cl.Patch(ctx, obj, patch, opts...)
		}}).Build()
	r := newTestClusterReconciler(t, fc, record.NewFakeRecorder(5), time.Now)
	rep := r.reconcileStorage(context.Background(), c)
	if rep == nil || rep.Settled || !strings.Contains(rep.Message, "could not raise the request of store-a: quota exceeded") {
		t.Errorf("report %+v", rep)
	}
	if q := getClaim(t, fc, "store-b").Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Errorf("store-b request %s, want 2Gi", q.String())
	}
}
