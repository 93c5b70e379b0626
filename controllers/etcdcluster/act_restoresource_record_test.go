package etcdcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restoreorigin"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// TestBootstrapKeepsARestoreSourceAfterTheBackupChanges: a restore by backupRef wrote
// its EtcdBackup's storage into the cluster's annotation; the backup's Secret is rotated
// and its path moved before every member exists. The members still to be created
// restore from what the EtcdRestore recorded writing into this very cluster (its UID and
// exact source). A new cluster carrying a copy of the annotation, the recorded cluster
// with its annotation edited, or another cluster is refused and gets no pod.
func TestBootstrapKeepsARestoreSourceAfterTheBackupChanges(t *testing.T) {
	written := render.RestoreSource{Restore: "r1", UID: "uid-r1", SHA256: strings.Repeat("ab", 32),
		S3: &etcdv1beta2.S3BackupSource{Path: "backups/c/per_v20_2026-12-01-10:00:00", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}}
	cluster := func(name, uid string, src render.RestoreSource) *etcdv1beta2.EtcdCluster {
		return restoredCluster(t, name, uid, src)
	}
	recorded := cluster("restored", "uid-restored", written)
	er := nightlyRestoreOf(t, recorded)
	// The EtcdBackup as it is now: another Secret, another path.
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: etcdv1beta2.BackupSource{
			S3: &etcdv1beta2.S3BackupSource{Path: "backups/c/moved", AWSSecret: "aws-rotated", Endpoint: "http://minio:9000", ForcePathStyle: true}}},
	}
	editedSrc := written
	s3 := *written.S3
	s3.AWSSecret = "admin-creds"
	editedSrc.S3 = &s3
	for _, tc := range []struct {
		name    string
		c       *etcdv1beta2.EtcdCluster
		wantErr string // empty: the restore is honoured
	}{
		{"the recorded cluster", recorded, ""},
		{"a new cluster with a copy of the annotation", cluster("restored", "uid-new", written), "awsSecret"},
		{"the recorded cluster, its annotation edited", cluster("restored", "uid-restored", editedSrc), "awsSecret"},
		{"another cluster", cluster("victim", "uid-restored", written), "victim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture.Scheme()
			fc := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.c, er, eb).Build()
			r := newTestReconciler(t, Reconciler{Client: fc, Scheme: s, Recorder: record.NewFakeRecorder(10), OperatorImage: "op:configured"})
			err := r.createMembers(context.Background(), tc.c, bootstrapMembers(tc.c))
			var pods corev1.PodList
			if lerr := fc.List(context.Background(), &pods, client.InNamespace("default")); lerr != nil {
				t.Fatal(lerr)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || len(pods.Items) != 0 {
					t.Fatalf("error %v and %d pods; want a refusal mentioning %q and no pod", err, len(pods.Items), tc.wantErr)
				}
				return
			}
			if err != nil || len(pods.Items) != 3 {
				t.Fatalf("%d pods, %v; want the 3 members restoring", len(pods.Items), err)
			}
			for _, p := range pods.Items {
				if !mountsSecret(&p, "aws") || mountsSecret(&p, "aws-rotated") {
					t.Errorf("%s: volumes %+v; want the recorded Secret aws, not the EtcdBackup's current one", p.Name, p.Spec.Volumes)
				}
			}
		})
	}
}

// restoredCluster is a 3-member cluster whose restore annotation says src.
func restoredCluster(t *testing.T, name, uid string, src render.RestoreSource) *etcdv1beta2.EtcdCluster {
	t.Helper()
	ann, err := src.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID(uid), Annotations: ann},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
}

// nightlyRestoreOf is EtcdRestore r1 of EtcdBackup "nightly" (by backupRef), which
// recorded creating c.
func nightlyRestoreOf(t *testing.T, c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdRestore {
	t.Helper()
	rec, err := restoreorigin.RecordOf(c)
	if err != nil {
		t.Fatal(err)
	}
	return &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "default", UID: "uid-r1", Annotations: map[string]string{
			etcdv1beta2.RestoreBackupRefAnnotation: "nightly", restoreorigin.CreatedClusterAnnotation: rec}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: c.Name}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	}
}

func mountsSecret(p *corev1.Pod, name string) bool {
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
	}
	return false
}
