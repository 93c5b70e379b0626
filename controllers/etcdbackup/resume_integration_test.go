//go:build integration

package etcdbackup

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestRunStoredBeforeAKillIsRecordedNotRepeated: an operator that stored a periodic
// backup's object and stopped before writing status leaves the run due by status; the
// next operator finds that object in the store and records it, and uploads nothing
// (the EtcdBackup's cluster does not exist here, so any upload attempt fails). An object
// of the last recorded run does not count for the next one.
func TestRunStoredBeforeAKillIsRecordedNotRepeated(t *testing.T) {
	srv, store := fixture.MinIOStore(t, "bkt")
	created := testStart.Add(-time.Hour)
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: "default", CreationTimestamp: metav1.NewTime(created), Generation: 1},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "absent"},
			BackupPolicy: &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "bkt/c/per", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	put := func(rev int64, at time.Time) string {
		t.Helper()
		key := backup.PeriodicKey("c/per", rev, at)
		if _, err := store.Put(t.Context(), key, strings.NewReader("snapshot"),
			backup.PutOptions{Metadata: map[string]string{"etcd-backup-namespace": "default", "etcd-backup-name": "hourly"}}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	objects := func() int {
		t.Helper()
		objs, err := store.List(t.Context(), "c/per")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range objs {
			if _, _, ok := backup.ParsePeriodicKey("c/per", o.Key); ok {
				n++
			}
		}
		return n
	}

	// The first run's object was stored 2 s after creation; status never heard of it.
	first := put(100, created.Add(2*time.Second))
	h := newHarness(t, eb, secret)
	h.clock.Set(created.Add(10 * time.Second))
	reconcileNoError(t, h)
	c := h.condition()
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, first) {
		t.Fatalf("Succeeded condition %+v, want True naming the stored object %s", c, first)
	}
	if got := h.backup().Status; got.EtcdRevision != 100 || !got.LastSuccessDate.Time.Equal(created.Add(2*time.Second)) {
		t.Errorf("status revision %d, last success %v; want the stored run's (100, %v)", got.EtcdRevision, got.LastSuccessDate, created.Add(2*time.Second))
	}
	if n := objects(); n != 1 {
		t.Errorf("%d objects after the resumed run, want 1", n)
	}

	// A run due one second after the recorded one (the shortest interval) finds only the
	// recorded run's object, which may be named in the due second: status lists it, so it
	// is not this run's.
	stored := h.backup()
	if len(stored.Status.Backups) != 1 || stored.Status.Backups[0].Key != first {
		t.Fatalf("status.backups %+v, want the stored object %s", stored.Status.Backups, first)
	}
	if !recorded(stored, first) || recorded(stored, first+"x") {
		t.Errorf("recorded() does not follow status.backups")
	}

	// An hour later the next run is due, and only the recorded run's object exists: that
	// is not this run's, so a backup is attempted (and fails: no cluster).
	h.clock.Set(created.Add(time.Hour + 10*time.Second))
	reconcileNoError(t, h)
	if c := h.condition(); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Succeeded condition %+v, want False: the last run's object must not stand for the next run", c)
	}
}

func reconcileNoError(t *testing.T, h *harness) {
	t.Helper()
	if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Logf("reconcile: %v", err)
	}
}
