package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
	"github.com/etcd-operator/etcd-operator/test/bench"
)

// TestEncryptedBackupRestore: a backup with spec.s3.encryptionKeySecret is stored in
// MinIO as bytes that hold none of the cluster's values and are no etcd snapshot; a
// restore without the key or with another key is refused (EncryptionKeyError) and
// creates nothing; with the key, the members' restore step (this build's binary, the key
// Secret mounted) brings every key back.
func TestEncryptedBackupRestore(t *testing.T) {
	const source, keys = "enc-src", 100
	const canary = "canary-secret-value-"
	ctx := context.Background()
	e := setupWithOperatorImage(t)

	srv := miniotest.StartOn(t, bench.ControlPlaneIP)
	srv.MakeBucket(t, backupBucket)
	newHexKey := func() []byte {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		return []byte(hex.EncodeToString(raw))
	}
	key := newHexKey()
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backup-key"}, Data: map[string][]byte{etcdv1beta2.EncryptionKeySecretKey: key}})
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-key"}, Data: map[string][]byte{etcdv1beta2.EncryptionKeySecretKey: newHexKey()}})
	s3 := func(keySecret string) *etcdv1beta2.S3BackupSource {
		return &etcdv1beta2.S3BackupSource{Path: backupBucket + "/enc/src.db", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true,
			EncryptionKeySecret: keySecret}
	}

	srcCli := startAvailable(e, source, 1)
	writeKeys(e, srcCli, keys, "/data", canary)
	want := dump(t, srcCli)
	if len(want) != keys {
		t.Fatalf("source holds %d keys, want %d", len(want), keys)
	}

	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "encrypted"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: source},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: s3("backup-key")},
		},
	})
	e.Eventually(90*time.Second, "backup succeeded", func() error {
		var eb etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "encrypted"}, &eb); err != nil {
			return err
		}
		if !eb.Status.Succeeded {
			return fmt.Errorf("backup status %+v", eb.Status)
		}
		if strings.Contains(fmt.Sprint(eb.Status), string(key[:16])) {
			t.Errorf("backup status shows the key")
		}
		return nil
	})

	// What whoever can read the bucket gets.
	stored, _ := srv.ReadObject(t, backupBucket, "enc/src.db")
	if bytes.Contains(stored, []byte(canary)) || bytes.Contains(stored, []byte("/data/0000")) {
		t.Fatalf("the stored backup (%d bytes) contains the cluster's keys or values", len(stored))
	}
	p := filepath.Join(t.TempDir(), "stored.db")
	if err := os.WriteFile(p, stored, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := restore.CheckSnapshotFile(p); !errors.Is(err, restore.ErrNotRestorable) {
		t.Fatalf("the stored backup is an etcd snapshot (%v)", err)
	}

	restoreOf := func(name, cluster, keySecret string) *etcdv1beta2.EtcdRestore {
		return &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{etcdrestore.RestoreClusterSpecAnnotation: `{"size": 1}`}},
			Spec: etcdv1beta2.EtcdRestoreSpec{
				EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: cluster},
				BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
				RestoreSource:     etcdv1beta2.RestoreSource{S3: s3(keySecret)},
			},
		}
	}
	for _, tc := range []struct{ name, keySecret string }{{"no-key", ""}, {"wrong-key", "other-key"}} {
		e.Create(restoreOf(tc.name, "from-"+tc.name, tc.keySecret))
		er := waitRestore(t, e, tc.name, metav1.ConditionFalse, etcdv1beta2.ReasonEncryptionKeyError, 60*time.Second)
		if !strings.Contains(er.Status.Reason, "key") || strings.Contains(er.Status.Reason, string(key[:16])) {
			t.Errorf("%s: status.reason %q", tc.name, er.Status.Reason)
		}
		var c etcdv1beta2.EtcdCluster
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "from-" + tc.name}, &c); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a cluster was created: %v", tc.name, err)
		}
	}

	e.Create(restoreOf("with-key", "from-key", "backup-key"))
	waitRestore(t, e, "with-key", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
	e.WaitAvailable("from-key", 1, 60*time.Second)
	if got := dump(t, e.EtcdClient("from-key")); !reflect.DeepEqual(got, want) {
		t.Errorf("restored cluster holds %d keys, source %d; first differences: %v", len(got), len(want), firstDiffs(got, want, 5))
	}
}
