//go:build integration

package etcdrestore

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestRestoreKeepsItsClusterWhenTheBackupChanges: a restore that names an EtcdBackup and
// may replace a cluster creates its cluster from the backup's storage as it was then.
// When the backup's Secret is rotated and its path moved while the cluster bootstraps,
// the restore still knows the cluster as its own (by the record of its UID and source,
// or by the object pinned in status.backup) and never deletes it; nor when someone edits
// the cluster's restore annotation afterwards.
func TestRestoreKeepsItsClusterWhenTheBackupChanges(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	awsData := fixture.AWSSecretData(srv)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// The backup writes under c/per, later under c/moved: both hold a verifiable
	// object of its own, so a restore misjudging its cluster would find a backup to
	// replace it with.
	for _, prefix := range []string{"c/per", "c/moved"} {
		md := map[string]string{"etcd-backup-namespace": "default", "etcd-backup-name": "nightly", "etcd-revision": "0"}
		if _, err := store.Put(ctx, backup.PeriodicKey(prefix, 20, t0), bytes.NewReader(etcdtest.Snapshot(t, 4)), backup.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: awsData}
	}
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "c"},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: restoreBucket + "/c/per", AWSSecret: "aws",
				Endpoint: srv.Endpoint(), ForcePathStyle: true}}},
	}
	mk := func(name string) *etcdv1beta2.EtcdRestore {
		return &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{
				etcdv1beta2.RestoreBackupRefAnnotation: "nightly", ReplaceExistingClusterAnnotation: "true"}},
			Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: name}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
		}
	}
	f := newRestoreFixture(t, secret("aws"), secret("aws-rotated"), eb, mk("recorded"), mk("unrecorded"), mk("edited"))
	cluster := func(name string) *etcdv1beta2.EtcdCluster {
		t.Helper()
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
		return &c
	}
	created := map[string]*etcdv1beta2.EtcdCluster{}
	for _, name := range []string{"recorded", "unrecorded", "edited"} {
		f.reconcile(t, name)
		f.wantCondition(t, name, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting for it to become Available")
		created[name] = cluster(name)
		if got := restoreorigin.RecordedUID(f.restore(t, name)); got == "" || got != string(created[name].UID) {
			t.Fatalf("%s: recorded uid %q, cluster uid %q", name, got, created[name].UID)
		}
	}
	// An operator that stopped between creating the cluster and recording it.
	unrecorded := f.restore(t, "unrecorded")
	delete(unrecorded.Annotations, restoreorigin.CreatedClusterAnnotation)
	if err := f.c.Update(ctx, unrecorded); err != nil {
		t.Fatal(err)
	}
	// Someone who may edit EtcdClusters points the annotation at another Secret and
	// object: only the recorded UID still tells the cluster is this restore's.
	edited := cluster("edited")
	src, err := render.Restore(edited)
	if err != nil {
		t.Fatal(err)
	}
	src.S3.AWSSecret, src.S3.Path = "aws-rotated", restoreBucket+"/"+backup.PeriodicKey("c/moved", 20, t0)
	ann, err := src.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	edited.Annotations = ann
	if err := f.c.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	created["edited"] = edited
	fixture.DrainEvents(f.rec)

	// The tenant rotates the backup's Secret and moves its path.
	var live etcdv1beta2.EtcdBackup
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(eb), &live); err != nil {
		t.Fatal(err)
	}
	live.Spec.S3.AWSSecret, live.Spec.S3.Path = "aws-rotated", restoreBucket+"/c/moved"
	if err := f.c.Update(ctx, &live); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"recorded", "unrecorded", "edited"} {
		for range 2 {
			f.reconcile(t, name)
		}
		c := cluster(name)
		if c.UID != created[name].UID || !c.DeletionTimestamp.IsZero() {
			t.Errorf("%s: the restore's own cluster was replaced or is being deleted (uid %s, was %s)", name, c.UID, created[name].UID)
		}
		if _, ok := f.restore(t, name).Annotations[ReplacedClusterAnnotation]; ok {
			t.Errorf("%s: a replacement of its own cluster was recorded", name)
		}
	}
	for _, name := range []string{"recorded", "unrecorded", "edited"} {
		f.wantCondition(t, name, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting for it to become Available")
	}
	for _, e := range fixture.DrainEvents(f.rec) {
		if strings.Contains(e, etcdv1beta2.EventReasonDeletedCluster) {
			t.Errorf("event %q", e)
		}
	}
}
