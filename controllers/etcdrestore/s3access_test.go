//go:build integration

package etcdrestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

// hexKey is a new key and its Secret form (64 hex digits).
func hexKey(t *testing.T) (*backupcrypt.Key, []byte) {
	t.Helper()
	raw := make([]byte, backupcrypt.KeySize)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	k, err := backupcrypt.ParseKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k, []byte(hex.EncodeToString(raw))
}

// An encrypted backup restores only with its key: without one, or with another, the
// restore is refused as EncryptionKeyError (with fingerprints, never a key) and nothing
// is created; with it the cluster is created and its members are told which Secret
// holds the key.
func TestRestoreEncryptedBackup(t *testing.T) {
	srv := miniotest.Start(t)
	srv.MakeBucket(t, restoreBucket)
	creds, err := backup.ParseAWSSecret(map[string][]byte{"credentials": []byte(srv.AWSCredentialsFile())})
	if err != nil {
		t.Fatal(err)
	}
	key, keyHex := hexKey(t)
	other, otherHex := hexKey(t)
	if key.Fingerprint() == other.Fingerprint() {
		t.Fatal("test keys are equal")
	}
	// Written as an EtcdBackup of the restore's namespace writes it (bound to "default").
	store, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: restoreBucket, ForcePathStyle: true, Credentials: creds, Key: key, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := store.Put(context.Background(), "c/enc.db", bytes.NewReader(etcdtest.Snapshot(t, 5)), backup.PutOptions{Metadata: map[string]string{"etcd-version": "3.6.16"}})
	if err != nil {
		t.Fatal(err)
	}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
	}
	mk := func(name, keySecret string) *etcdv1beta2.EtcdRestore {
		er := fixture.S3Restore(name, "from-"+name, restoreBucket+"/c/enc.db")
		er.Spec.S3.Endpoint, er.Spec.S3.EncryptionKeySecret = srv.Endpoint(), keySecret
		return er
	}
	f := newRestoreFixture(t,
		secret("aws", map[string][]byte{"credentials": []byte(srv.AWSCredentialsFile())}),
		secret("key", map[string][]byte{etcdv1beta2.EncryptionKeySecretKey: keyHex}),
		secret("other", map[string][]byte{etcdv1beta2.EncryptionKeySecretKey: otherHex}),
		mk("with-key", "key"), mk("no-key", ""), mk("wrong-key", "other"), mk("missing-key", "absent"))

	f.reconcile(t, "no-key")
	f.wantCondition(t, "no-key", metav1.ConditionFalse, etcdv1beta2.ReasonEncryptionKeyError, key.Fingerprint())
	f.reconcile(t, "wrong-key")
	er := f.wantCondition(t, "wrong-key", metav1.ConditionFalse, etcdv1beta2.ReasonEncryptionKeyError, other.Fingerprint())
	if !strings.Contains(er.Status.Reason, key.Fingerprint()) {
		t.Errorf("wrong key: %q does not name the backup's key fingerprint", er.Status.Reason)
	}
	f.reconcile(t, "missing-key")
	f.wantCondition(t, "missing-key", metav1.ConditionFalse, etcdv1beta2.ReasonEncryptionKeyError, "absent")
	if n := len(f.clusters(t)); n != 0 {
		t.Fatalf("%d clusters created without the right key", n)
	}
	for _, e := range fixture.DrainEvents(f.rec) {
		if strings.Contains(e, string(keyHex[:16])) || strings.Contains(e, string(otherHex[:16])) {
			t.Errorf("event shows a key: %s", e)
		}
	}

	// The same object copied under another key is not restored in its place.
	if _, err := srv.Client(t).CopyObject(context.Background(), minio.CopyDestOptions{Bucket: restoreBucket, Object: "c/moved.db"},
		minio.CopySrcOptions{Bucket: restoreBucket, Object: "c/enc.db"}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client(t).CopyObject(context.Background(), minio.CopyDestOptions{Bucket: restoreBucket, Object: "c/moved.db.sha256"},
		minio.CopySrcOptions{Bucket: restoreBucket, Object: "c/enc.db.sha256"}); err != nil {
		t.Fatal(err)
	}
	moved := mk("moved", "key")
	moved.Spec.S3.Path = restoreBucket + "/c/moved.db"
	if err := f.c.Create(context.Background(), moved); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "moved")
	f.wantCondition(t, "moved", metav1.ConditionFalse, etcdv1beta2.ReasonBackupMisplaced, `written as key "c/enc.db", not "c/moved.db"`)
	if n := len(f.clusters(t)); n != 0 {
		t.Fatalf("%d clusters created from a moved backup", n)
	}

	f.reconcile(t, "with-key")
	f.wantCondition(t, "with-key", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting")
	cs := f.clusters(t)
	if len(cs) != 1 {
		t.Fatalf("clusters %d, want 1", len(cs))
	}
	src, err := render.Restore(&cs[0])
	if err != nil || src == nil || src.S3.EncryptionKeySecret != "key" || src.SHA256 != obj.SHA256 {
		t.Fatalf("restore source %+v (%v); want key Secret \"key\" and sha256 %s", src, err, obj.SHA256)
	}
}

// credentialsSource Environment: refused while the operator lends no identity, and with
// --allow-ambient-s3-credentials the operator's own (here: its environment variables)
// reads the backup; the members' restore step will use their own pod's identity.
func TestRestoreWithAmbientCredentials(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	if _, err := store.Put(context.Background(), "c/one.db", bytes.NewReader(etcdtest.Snapshot(t, 3)), backup.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	ambientCredentials(t, srv)
	er := fixture.S3Restore("ambient", "from-ambient", restoreBucket+"/c/one.db")
	er.Spec.S3.Endpoint, er.Spec.S3.AWSSecret, er.Spec.S3.CredentialsSource = srv.Endpoint(), "", etcdv1beta2.S3CredentialsEnvironment
	f := newRestoreFixture(t, er)

	c := f.ambientRefusedThenAllowed(t, "ambient", "spec.s3.awsSecret")
	if src, err := render.Restore(&c); err != nil || src.S3.CredentialsSource != etcdv1beta2.S3CredentialsEnvironment || src.S3.AWSSecret != "" {
		t.Fatalf("restore source %+v (%v)", src, err)
	}

	// Wrong ambient keys are the store's AccessDenied, not a success.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-"+srv.SecretKey)
	er2 := er.DeepCopy()
	er2.Name, er2.UID, er2.ResourceVersion, er2.Spec.EtcdCluster.Name = "ambient-bad", "uid-ambient-bad", "", "from-ambient-bad"
	if err := f.c.Create(context.Background(), er2); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "ambient-bad")
	f.wantCondition(t, "ambient-bad", metav1.ConditionFalse, etcdv1beta2.ReasonAccessDenied, "")
}

// A restore by backupRef reads the EtcdBackup's storage as the operator lends it: an
// EtcdBackup with credentialsSource Environment is refused without
// --allow-ambient-s3-credentials and read with the operator's identity with it.
func TestRestoreByBackupRefWithAmbientCredentials(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	md := map[string]string{"etcd-backup-namespace": "default", "etcd-backup-name": "ambient", "etcd-revision": "0"}
	obj, err := store.Put(context.Background(), backup.PeriodicKey("c/per", 7, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)),
		bytes.NewReader(etcdtest.Snapshot(t, 3)), backup.PutOptions{Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	ambientCredentials(t, srv)
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "ambient", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "c"},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: restoreBucket + "/c/per",
				CredentialsSource: etcdv1beta2.S3CredentialsEnvironment, Endpoint: srv.Endpoint(), ForcePathStyle: true}}},
	}
	er := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "by-ref", Namespace: "default", UID: "uid-by-ref",
			Annotations: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "ambient"}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "from-ref"}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	}
	f := newRestoreFixture(t, eb, er)

	c := f.ambientRefusedThenAllowed(t, "by-ref", "allow-ambient-s3-credentials")
	src, err := render.Restore(&c)
	if err != nil || src.S3.CredentialsSource != etcdv1beta2.S3CredentialsEnvironment || src.S3.AWSSecret != "" || src.S3.Path != restoreBucket+"/"+obj.Key {
		t.Fatalf("restore source %+v (%v), want %s with the pod's own identity", src, err, obj.Key)
	}
}

// ambientCredentials gives the process srv's keys as the S3 SDK's ambient identity: the
// chain's first provider; the others (a credentials file, instance metadata) are kept
// from answering first.
func ambientCredentials(t *testing.T, srv *miniotest.Server) {
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
}

// ambientRefusedThenAllowed reconciles the restore name while the operator lends no
// identity (refused, the message naming mention, no cluster created), then with
// --allow-ambient-s3-credentials, and returns the one cluster it then creates.
func (f *restoreFixture) ambientRefusedThenAllowed(t *testing.T, name, mention string) etcdv1beta2.EtcdCluster {
	t.Helper()
	f.reconcile(t, name)
	f.wantCondition(t, name, metav1.ConditionFalse, etcdv1beta2.ReasonAmbientCredentialsRefused, mention)
	if len(f.clusters(t)) != 0 {
		t.Fatal("a cluster was created with the operator's identity without its consent")
	}
	f.r.S3Access = backupstorage.S3Access{AllowAmbient: true, AllowEndpoints: testS3Access.AllowEndpoints}
	f.reconcile(t, name)
	f.wantCondition(t, name, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting")
	cs := f.clusters(t)
	if len(cs) != 1 {
		t.Fatalf("clusters %d, want 1", len(cs))
	}
	return cs[0]
}
