//go:build integration

package etcdbackup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// A verification of an S3 backup restores the exact object the controller picked: the
// newest this EtcdBackup wrote, never a newer one another EtcdBackup wrote under the same
// prefix (which would then be recorded as this backup's lastVerifiedKey); the pod is not
// told to pick the newest itself. With no object of its own there is nothing to verify.
func TestVerificationOfS3VerifiesTheBackupsOwnNewestObject(t *testing.T) {
	srv := miniotest.Start(t)
	srv.MakeBucket(t, "bkt")
	data := fixture.AWSSecretData(srv)
	creds, err := backup.ParseAWSSecret(data)
	if err != nil {
		t.Fatal(err)
	}
	store, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: "bkt", ForcePathStyle: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	put := func(rev int64, when time.Time, owner string) string {
		t.Helper()
		key := backup.PeriodicKey("shared/per", rev, when)
		md := map[string]string{backupselect.MetaBackupNamespace: "v-s3", backupselect.MetaBackupName: owner}
		if _, err := store.Put(t.Context(), key, strings.NewReader("snapshot"), backup.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	newBackup := func(name string) *etcdv1beta2.EtcdBackup {
		return &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "v-s3", Generation: 1,
				Annotations: map[string]string{etcdv1beta2.BackupVerifyAfterEachAnnotation: "true"}},
			Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "main"},
				BackupPolicy: &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600},
				BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "bkt/shared/per", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}}},
			Status: etcdv1beta2.EtcdBackupStatus{Succeeded: true, EtcdVersion: "3.6.16", EtcdRevision: 10, LastSuccessDate: metav1.NewTime(testStart)},
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "v-s3"}, Data: data}
	ours := put(10, at, "nightly")
	put(20, at.Add(time.Hour), "other") // newer, same prefix, another EtcdBackup's

	h := newHarness(t, newBackup("nightly"), append(mainCluster("v-s3"), secret)...)
	if _, err := h.verifier().Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Fatal(err)
	}
	p := h.verifyPod()
	if p == nil {
		t.Fatalf("no verification pod; condition %+v", h.verified())
	}
	args := p.Spec.InitContainers[0].Args
	if !slices.Contains(args, "--s3-path=bkt/"+ours) || slices.Contains(args, "--latest") {
		t.Errorf("restore args %v, want exactly --s3-path=bkt/%s and no --latest", args, ours)
	}

	h = newHarness(t, newBackup("stranger"), append(mainCluster("v-s3"), secret)...)
	if _, err := h.verifier().Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Fatal(err)
	}
	if h.verifyPod() != nil {
		t.Error("a verification pod for a backup that wrote no object")
	}
	if c := h.verified(); c == nil || c.Reason != etcdv1beta2.ReasonNothingToVerify || !strings.Contains(c.Message, "written by this EtcdBackup") {
		t.Errorf("condition %+v", c)
	}
}
