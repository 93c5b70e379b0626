package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// TestRestoreNewestBefore takes three backups of different data at known times into
// MinIO, checks that status.backups lists all three newest first, then restores "the
// newest before" a time between the second and the third: the restored cluster holds the
// second backup's keys and not the third's, at a revision bumped past the old cluster's.
func TestRestoreNewestBefore(t *testing.T) {
	const source, restored = "pick-src", "picked"
	ctx := context.Background()
	e := setupWithOperatorImage(t)

	srv := backupStore(t, e)

	cli := startAvailable(e, source, 1)

	getBackup := func() *etcdv1beta2.EtcdBackup {
		var eb etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hourly"}, &eb); err != nil {
			t.Fatal(err)
		}
		return &eb
	}
	waitBackups := func(n int) []etcdv1beta2.StoredBackup {
		var list []etcdv1beta2.StoredBackup
		e.Eventually(60*time.Second, fmt.Sprintf("%d backups in status", n), func() error {
			list = getBackup().Status.Backups
			if len(list) != n {
				return fmt.Errorf("status.backups %+v", list)
			}
			return nil
		})
		return list
	}
	backupNow := func(value string) {
		eb := getBackup()
		orig := eb.DeepCopy()
		eb.Annotations = map[string]string{etcdv1beta2.BackupNowAnnotation: value}
		if err := e.C.Patch(ctx, eb, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}
	// The next backup's name must carry a later second than at.
	afterSecond := func(at time.Time) {
		e.Eventually(5*time.Second, "the clock to pass "+at.String(), func() error {
			if !time.Now().After(at.Add(time.Second)) {
				return fmt.Errorf("not yet")
			}
			return nil
		})
	}

	// Backup 1 (keys /data/one/...): taken when the periodic backup is created.
	writeKeys(e, cli, 10, "/data/one", "v1-")
	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "hourly"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", source)},
			StorageType:   etcdv1beta2.BackupStorageTypeS3,
			BackupPolicy:  &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
				Path: backupBucket + "/pick/src", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}},
		},
	})
	first := waitBackups(1)[0]
	afterSecond(first.Time.Time)
	writeKeys(e, cli, 10, "/data/two", "v2-")
	backupNow("2")
	second := waitBackups(2)[0]
	afterSecond(second.Time.Time)
	writeKeys(e, cli, 10, "/data/three", "v3-")
	backupNow("3")
	list := waitBackups(3)
	third := list[0]
	if list[1].Key != second.Key || list[2].Key != first.Key || !(third.Revision > second.Revision && second.Revision > first.Revision) ||
		!(third.Time.After(second.Time.Time) && second.Time.After(first.Time.Time)) {
		t.Fatalf("status.backups not the three backups newest first: %+v", list)
	}
	for _, b := range list {
		if len(b.SHA256) != 64 || b.Size == 0 || !strings.HasPrefix(b.Key, "pick/src_v") {
			t.Errorf("status.backups entry %+v", b)
		}
	}

	// "Newest before" the second backup's own second (at or before it), written in
	// another zone: the third, taken at least a second later, is excluded.
	cut := second.Time.Time.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339)
	e.Create(&etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "pick", Annotations: map[string]string{
			etcdv1beta2.RestoreBackupRefAnnotation:    "hourly",
			etcdv1beta2.RestoreNewestBeforeAnnotation: cut,
			etcdrestore.RestoreClusterSpecAnnotation:  `{"size": 1}`,
		}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: restored}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	})
	er := waitRestore(t, e, "pick", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
	if b := er.Status.Backup; b == nil || b.Key != second.Key || b.Revision != second.Revision {
		t.Errorf("status.backup %+v, want %s", b, second.Key)
	}
	e.WaitAvailable(restored, 1, 60*time.Second)
	rcli := e.EtcdClient(restored)
	got := dump(t, rcli)
	count := map[string]int{}
	for k := range got {
		count[strings.Split(k, "/")[2]]++
	}
	if count["one"] != 10 || count["two"] != 10 || count["three"] != 0 {
		t.Errorf("restored cluster holds %v keys per backup; want the first two backups' keys (10 each) and none of the third's", count)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := rcli.Get(rctx, "/data/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision <= second.Revision+restore.RevisionBump-1 {
		t.Errorf("restored cluster at revision %d, not bumped past the backup's %d", resp.Header.Revision, second.Revision)
	}
}
