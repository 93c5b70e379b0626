//go:build integration

package etcdrestore

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestRestoreChoosesFromBackupRef: a restore naming an EtcdBackup takes the object its
// selection chooses among those that backup wrote, records it in status before acting,
// and creates the cluster from exactly that object with the backup's storage. A
// selection that matches nothing, or a backupRef with an object key, touches nothing.
func TestRestoreChoosesFromBackupRef(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	put := func(rev int64, at time.Time, owner string, keys int) backup.Object {
		t.Helper()
		md := map[string]string{"etcd-backup-namespace": "default", "etcd-backup-name": owner, "etcd-revision": "0"}
		obj, err := store.Put(ctx, backup.PeriodicKey("c/per", rev, at), bytes.NewReader(etcdtest.Snapshot(t, keys)), backup.PutOptions{Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	put(10, t0, "nightly", 3)
	second := put(20, t0.Add(time.Hour), "nightly", 4)
	put(30, t0.Add(2*time.Hour), "nightly", 5)
	// Newer than the second and before the selection's time, but another backup's.
	put(25, t0.Add(90*time.Minute), "other", 6)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "c"},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: restoreBucket + "/c/per", AWSSecret: "aws",
				Endpoint: srv.Endpoint(), ForcePathStyle: true}}},
	}
	mk := func(name string, ann map[string]string) *etcdv1beta2.EtcdRestore {
		ann[etcdv1beta2.RestoreBackupRefAnnotation] = "nightly"
		return &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: ann},
			Spec:       etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: name}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
		}
	}
	// 11:40 UTC, written in another zone.
	before := mk("before", map[string]string{etcdv1beta2.RestoreNewestBeforeAnnotation: "2026-12-01T13:40:00+02:00"})
	minRev := mk("minrev", map[string]string{etcdv1beta2.RestoreMinRevisionAnnotation: "15"})
	none := mk("none", map[string]string{etcdv1beta2.RestoreNewestBeforeAnnotation: "2026-12-01T09:00:00Z"})
	withKey := mk("withkey", map[string]string{})
	withKey.Spec.S3 = &etcdv1beta2.S3BackupSource{Path: restoreBucket + "/c/one.db", AWSSecret: "aws"}
	badTime := mk("badtime", map[string]string{etcdv1beta2.RestoreNewestBeforeAnnotation: "yesterday"})
	f := newRestoreFixture(t, secret, eb, before, minRev, none, withKey, badTime)

	for _, name := range []string{"before", "minrev"} {
		f.reconcile(t, name)
		f.wantCondition(t, name, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting for it to become Available")
		er := f.restore(t, name)
		if b := er.Status.Backup; b == nil || b.Key != second.Key || b.Revision != 20 || !b.Time.Time.Equal(t0.Add(time.Hour)) || b.SHA256 != second.SHA256 {
			t.Errorf("%s: status.backup %+v, want %s", name, b, second.Key)
		}
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
			t.Fatal(err)
		}
		src, err := render.Restore(&c)
		if err != nil || src.S3 == nil || src.S3.Path != restoreBucket+"/"+second.Key || src.SHA256 != second.SHA256 || src.S3.AWSSecret != "aws" {
			t.Fatalf("%s: restore source %+v %v", name, src, err)
		}
		// The cluster is recognised as this restore's (with the EtcdBackup standing in
		// for its storage), not refused as someone else's.
		f.reconcile(t, name)
		f.wantCondition(t, name, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting for it to become Available")
	}

	f.reconcile(t, "none")
	f.wantCondition(t, "none", metav1.ConditionFalse, etcdv1beta2.ReasonNoBackupMatches, "none of the 4 backups was taken at or before 2026-12-01T09:00:00Z")
	f.reconcile(t, "withkey")
	f.wantCondition(t, "withkey", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "leave out spec.s3")
	f.reconcile(t, "badtime")
	f.wantCondition(t, "badtime", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, etcdv1beta2.RestoreNewestBeforeAnnotation)
	for _, c := range f.clusters(t) {
		if c.Name != "before" && c.Name != "minrev" {
			t.Errorf("cluster %s created by a restore that chose nothing", c.Name)
		}
	}
	if b := f.restore(t, "none").Status.Backup; b != nil {
		t.Errorf("a selection that matched nothing recorded %+v", b)
	}
}
