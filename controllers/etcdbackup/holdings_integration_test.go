//go:build integration

package etcdbackup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestSucceedListsTheBackupsHoldings: after a backup, status.backups lists the newest
// objects this EtcdBackup wrote (bounded, newest first, with revision, time, size and
// checksum), never another backup's object under the same names, and keeps what it
// knew about an object's verification.
func TestSucceedListsTheBackupsHoldings(t *testing.T) {
	srv, store := fixture.MinIOStore(t, "bkt")
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "c"},
			BackupPolicy: &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "bkt/c/per", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var keys []string
	put := func(i int, owner string) backup.Object {
		t.Helper()
		key := backup.PeriodicKey("c/per", int64(100+i), t0.Add(time.Duration(i)*time.Hour))
		obj, err := store.Put(t.Context(), key, strings.NewReader(fmt.Sprintf("snapshot %d", i)),
			backup.PutOptions{Metadata: map[string]string{"etcd-backup-namespace": "default", "etcd-backup-name": owner}})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	for i := range 12 {
		keys = append(keys, put(i, "nightly").Key)
	}
	foreign := put(20, "other") // the newest by name, another backup's
	// What status knew before: the newest object verified.
	newest := keys[11]
	_, obj, err := store.Get(t.Context(), newest)
	if err != nil {
		t.Fatal(err)
	}
	eb.Status.Backups = []etcdv1beta2.StoredBackup{{Key: newest, SHA256: obj.SHA256, Verified: true}}

	h := newHarness(t, eb, secret)
	got := h.backup()
	s := newScope(got)
	if _, err := h.r.succeed(h.ctx, s, h.clock.Now(), backup.JobResult{Key: newest, Revision: 111}, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := h.r.updateStatus(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	list := h.backup().Status.Backups
	if len(list) != etcdv1beta2.MaxStatusBackups {
		t.Fatalf("status.backups has %d entries, want %d: %+v", len(list), etcdv1beta2.MaxStatusBackups, list)
	}
	for i, b := range list {
		want := keys[11-i]
		if b.Key != want || b.Revision != int64(100+11-i) || !b.Time.Time.Equal(t0.Add(time.Duration(11-i)*time.Hour)) || b.Size == 0 || len(b.SHA256) != 64 {
			t.Errorf("status.backups[%d] = %+v, want %s", i, b, want)
		}
		if b.Key == foreign.Key {
			t.Errorf("another backup's object listed: %s", b.Key)
		}
		if b.Verified != (b.Key == newest) {
			t.Errorf("%s verified=%v", b.Key, b.Verified)
		}
	}
}
