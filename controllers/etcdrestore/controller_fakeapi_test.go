package etcdrestore

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

func TestRestoreRefusesATakenName(t *testing.T) {
	taken := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 5}}
	// A cluster created by another restore is not ours either.
	other := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}}
	ann, err := render.RestoreSource{Restore: "someone-else", UID: "uid-x", S3: &etcdv1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws"}}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	other.Annotations = ann
	f := newRestoreFixture(t, taken, other, fixture.S3Restore("r1", "prod", "b/k"), fixture.S3Restore("r2", "other", "b/k"))
	before := map[string]string{}
	for _, c := range f.clusters(t) {
		before[c.Name] = c.ResourceVersion
	}
	for _, name := range []string{"r1", "r2"} {
		if res := f.reconcile(t, name); res.RequeueAfter != 0 {
			t.Errorf("%s: a refused restore is retried: %+v", name, res)
		}
	}
	f.wantCondition(t, "r1", metav1.ConditionFalse, etcdv1beta2.ReasonClusterExists, "EtcdCluster prod already exists")
	f.wantCondition(t, "r2", metav1.ConditionFalse, etcdv1beta2.ReasonClusterExists, "nothing was changed")
	for _, c := range f.clusters(t) {
		if before[c.Name] != c.ResourceVersion {
			t.Errorf("cluster %s was changed", c.Name)
		}
	}
	if len(f.clusters(t)) != 2 {
		t.Errorf("clusters created: %v", f.clusters(t))
	}
	// Refusal is final for this spec, even once the name is free: nothing appears later
	// behind the user's back.
	if err := f.c.Delete(context.Background(), taken); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "r1")
	if len(f.clusters(t)) != 1 {
		t.Errorf("a refused restore created a cluster later")
	}
	select {
	case ev := <-f.rec.Events:
		if !strings.Contains(ev, etcdv1beta2.ReasonClusterExists) {
			t.Errorf("event %q", ev)
		}
	default:
		t.Errorf("no event for the refusal")
	}
}

func TestRestoreUnsupportedStorage(t *testing.T) {
	gcs := fixture.S3Restore("gcs", "new", "b/k")
	gcs.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypeGCS
	gcs.Spec.GCS = &etcdv1beta2.GCSBackupSource{Path: "b/k", GCPSecret: "gcp"}
	pvc := fixture.S3Restore("pvc", "new", "b/k")
	pvc.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypePVC
	badSpec := fixture.S3Restore("bad-spec", "new", "b/k")
	badSpec.Annotations = map[string]string{RestoreClusterSpecAnnotation: `{"size": "three"}`}
	f := newRestoreFixture(t, gcs, pvc, badSpec)
	f.reconcile(t, "gcs")
	f.reconcile(t, "pvc")
	f.reconcile(t, "bad-spec")
	f.wantCondition(t, "gcs", metav1.ConditionFalse, etcdv1beta2.ReasonUnsupportedStorageType, "S3-compatible endpoint")
	f.wantCondition(t, "pvc", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "spec.pvc.claimName")
	f.wantCondition(t, "bad-spec", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, RestoreClusterSpecAnnotation)
	if cs := f.clusters(t); len(cs) != 0 {
		t.Errorf("clusters created: %v", cs)
	}
}

// A PVC backup is not read by the operator: the cluster is created pointing at the
// claim and exact path, with no pinned checksum (the init containers verify the
// sidecar), and the etcd version of the spec annotation or the default.
func TestRestoreFromPVCCreatesCluster(t *testing.T) {
	versioned := fixture.PVCRestore("versioned", "v", "backups", "snaps/one.db")
	versioned.Annotations = map[string]string{RestoreClusterSpecAnnotation: `{"size": 1, "version": "3.7.3"}`}
	f := newRestoreFixture(t, fixture.PVCRestore("plain", "p", "backups", "/snaps//one.db"), versioned, fixture.PVCRestore("root", "r", "backups", "/"))
	for _, tc := range []struct {
		restore, cluster, version string
		size                      int
	}{{"plain", "p", etcdv1beta2.DefaultVersion, DefaultRestoreSize}, {"versioned", "v", "3.7.3", 1}} {
		f.reconcile(t, tc.restore)
		f.wantCondition(t, tc.restore, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "from backup pvc://backups/snaps/one.db (sha256 none recorded)")
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: tc.cluster}, &c); err != nil {
			t.Fatal(err)
		}
		src, err := render.Restore(&c)
		if err != nil || src == nil || src.S3 != nil || src.PVC == nil || src.PVC.ClaimName != "backups" || src.SHA256 != "" || src.Restore != tc.restore {
			t.Fatalf("%s: restore source %+v, %v", tc.cluster, src, err)
		}
		if c.Spec.Version != tc.version || c.Spec.Size != tc.size {
			t.Errorf("%s: spec %+v, want version %s size %d", tc.cluster, c.Spec, tc.version, tc.size)
		}
	}
	f.reconcile(t, "root")
	f.wantCondition(t, "root", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "names no file")
	if n := len(f.clusters(t)); n != 2 {
		t.Errorf("%d clusters, want 2", n)
	}
}

// A cluster whose annotation names this restore (name and UID, both readable by anyone
// in the namespace) but another backup is not the restore's own: it is refused as a
// taken name rather than followed, and never reported as restored.
func TestRestoreDoesNotAdoptAForgedCluster(t *testing.T) {
	forged := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-prod", Annotations: map[string]string{
		render.AnnotationRestore:                 `{"restore":"r1","uid":"uid-r1","s3":{"path":"b/k","awsSecret":"admin-creds","endpoint":"http://127.0.0.1:1","forcePathStyle":true}}`,
		"etcd.database.coreos.com/restore-image": "op:test",
	}}}
	forged.Status.Conditions = []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue}}
	f := newRestoreFixture(t, forged, fixture.S3Restore("r1", "prod", "b/k"))
	f.reconcile(t, "r1")
	f.wantCondition(t, "r1", metav1.ConditionFalse, etcdv1beta2.ReasonClusterExists, "was not created by this restore")
}
