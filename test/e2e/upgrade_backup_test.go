package e2e

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestUpgradeBackupRollback: a 3-member 3.6.16 cluster with a configured EtcdBackup
// target in MinIO is upgraded to 3.7.3. Before the first member moves the operator backs
// it up to the target's storage (a one-shot EtcdBackup it creates, not owned by the
// cluster) and records it in status.upgradeBackup. After the upgrade and further writes,
// the documented rollback — an EtcdRestore from that backup replacing the cluster of the
// same name — brings back the pre-upgrade data, on 3.6.16.
func TestUpgradeBackupRollback(t *testing.T) {
	const name, keys = "rollback", 100
	ctx := context.Background()
	e := setupWithOperatorImage(t) // the restore's init containers run this build

	srv := miniotest.StartOn(t, bench.ControlPlaneIP)
	srv.MakeBucket(t, backupBucket)
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})

	e.Create(newCluster(name, 3))
	e.WaitAvailable(name, 3, 120*time.Second)
	cli := e.EtcdClient(name)
	writeKeys(e, cli, keys, "/data", "before-")
	// The configured target: a daily backup of the cluster (its first run is now).
	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "daily"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: name},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupPolicy: &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 86400},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
				Path: backupBucket + "/rollback/daily", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}},
		},
	})
	want := dump(t, cli)
	if len(want) != keys {
		t.Fatalf("cluster holds %d keys before the upgrade, want %d", len(want), keys)
	}

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = "3.7.3" })
	e.Eventually(6*time.Minute, "every member runs 3.7.3", func() error {
		return membersRun(e, name, 3, "3.7.3")
	})
	e.WaitAvailable(name, 3, 60*time.Second)
	c := e.Cluster(name)
	rec := c.Status.UpgradeBackup
	if rec == nil || rec.Backup == "" || rec.Version != "3.7.3" || rec.FromVersion != "3.6.16" || rec.Skipped != "" ||
		rec.Revision == 0 || rec.Time == nil || !strings.Contains(rec.Key, ".before-3.7.3-") {
		t.Fatalf("status.upgradeBackup %+v: want the backup taken before the step", rec)
	}
	t.Logf("status.upgradeBackup: %s %s revision %d, taken %s on %s", rec.Backup, rec.Key, rec.Revision, rec.Time.UTC().Format(time.RFC3339), rec.FromVersion)
	var eb etcdv1beta2.EtcdBackup
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: rec.Backup}, &eb); err != nil {
		t.Fatalf("the recorded backup %s: %v", rec.Backup, err)
	}
	if !eb.Status.Succeeded || len(eb.OwnerReferences) != 0 || eb.Spec.S3 == nil || !strings.HasPrefix(eb.Spec.S3.Path, backupBucket+"/rollback/daily.before-3.7.3-") {
		t.Errorf("backup %s: succeeded %v, owners %v, storage %+v", eb.Name, eb.Status.Succeeded, eb.OwnerReferences, eb.Spec.S3)
	}
	// The snapshot was taken before the first member moved: its etcd version is 3.6.16,
	// and it was stored before any member pod was switched to 3.7.3 (events are
	// best-effort, so the recorded version is the proof).
	if eb.Status.EtcdVersion != "3.6.16" {
		t.Errorf("the backup was taken from a member on %q, want 3.6.16", eb.Status.EtcdVersion)
	}
	if !hasEvent(t, e.C, name, etcdv1beta2.EventReasonUpgradeBackupTaken) {
		t.Errorf("no %s event on the cluster", etcdv1beta2.EventReasonUpgradeBackupTaken)
	}

	// Written after the upgrade: gone after the rollback.
	writeKeys(e, cli, 10, "/after", "after-")

	// The documented rollback.
	old := e.Cluster(name)
	e.Create(&etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "rollback", Annotations: map[string]string{
			etcdv1beta2.RestoreBackupRefAnnotation:       rec.Backup,
			etcdrestore.ReplaceExistingClusterAnnotation: "true",
		}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: name}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	})
	waitRestore(t, e, "rollback", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 5*time.Minute)
	restored := e.WaitAvailable(name, 3, 120*time.Second)
	if restored.UID == old.UID {
		t.Fatalf("cluster %s was not replaced", name)
	}
	if restored.Spec.Version != "3.6.16" {
		t.Errorf("restored cluster's spec.version %q, want the backup's 3.6.16", restored.Spec.Version)
	}
	for pod, st := range e.MemberStatuses(name) {
		if st.Version != "3.6.16" {
			t.Errorf("restored member %s runs %s, want 3.6.16", pod, st.Version)
		}
	}
	got := dump(t, e.EtcdClient(name))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the rollback the cluster holds %d keys, before the upgrade %d; first differences: %v", len(got), len(want), firstDiffs(got, want, 5))
	}
	// The backup survived the replacement (not owned by the cluster).
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: rec.Backup}, &eb); err != nil {
		t.Errorf("the upgrade backup %s after the rollback: %v", rec.Backup, err)
	}
}

// hasEvent: an event of reason is recorded on the EtcdCluster name.
func hasEvent(t *testing.T, c client.Client, name, reason string) bool {
	t.Helper()
	var evs corev1.EventList
	if err := c.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Kind == "EtcdCluster" && ev.InvolvedObject.Name == name && ev.Reason == reason {
			return true
		}
	}
	return false
}

// requireClaimBackup: the cluster, which no EtcdBackup names, recorded the backup the
// operator took before its minor step from `from` to `to` into a claim of its own: the
// claim and the one-shot EtcdBackup are controlled by the cluster, the claim is bound,
// and the backup succeeded on `from` (taken before any member moved).
func requireClaimBackup(t *testing.T, e *framework.Env, name, from, to string) *etcdv1beta2.UpgradeBackupStatus {
	t.Helper()
	ctx := context.Background()
	c := e.Cluster(name)
	rec := c.Status.UpgradeBackup
	if rec == nil || rec.Backup == "" || rec.Claim != rec.Backup || rec.Version != to || rec.FromVersion != from || rec.Skipped != "" ||
		rec.Revision == 0 || !strings.Contains(rec.Key, ".before-"+to+"-") {
		t.Fatalf("status.upgradeBackup %+v: want the backup before %s → %s on a claim of the operator's", rec, from, to)
	}
	t.Logf("status.upgradeBackup: %s on claim %s, %s revision %d, from %s", rec.Backup, rec.Claim, rec.Key, rec.Revision, rec.FromVersion)
	var eb etcdv1beta2.EtcdBackup
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: rec.Backup}, &eb); err != nil {
		t.Fatalf("the recorded backup %s: %v", rec.Backup, err)
	}
	if !eb.Status.Succeeded || eb.Status.EtcdVersion != from || !metav1.IsControlledBy(&eb, c) ||
		eb.Spec.PVC == nil || eb.Spec.PVC.ClaimName != rec.Claim {
		t.Errorf("backup %s: succeeded %v on %q, owners %v, storage %+v; want succeeded on %s, the cluster's, on claim %s",
			eb.Name, eb.Status.Succeeded, eb.Status.EtcdVersion, eb.OwnerReferences, eb.Spec.PVC, from, rec.Claim)
	}
	var pvc corev1.PersistentVolumeClaim
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: rec.Claim}, &pvc); err != nil {
		t.Fatalf("the recorded claim %s: %v", rec.Claim, err)
	}
	if !metav1.IsControlledBy(&pvc, c) || pvc.Status.Phase != corev1.ClaimBound || pvc.Labels[etcdv1beta2.UpgradeBackupOfLabel] != name {
		t.Errorf("claim %s: owners %v, phase %s, labels %v; want the cluster's, bound, labelled", pvc.Name, pvc.OwnerReferences, pvc.Status.Phase, pvc.Labels)
	}
	return rec
}
