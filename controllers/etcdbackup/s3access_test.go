package etcdbackup

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// A backup asking for ambient credentials, or naming an unusable encryption key, fails
// before its cluster is dialled, with a reason and a message naming the field; status
// and events never show a key.
func TestBackupS3AccessRefusals(t *testing.T) {
	addr, accepted := countingListener(t)
	host, _, _ := net.SplitHostPort(addr)
	const keyHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	own := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a", UID: "own-uid"}}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}, Data: data}
	}
	backupOf := func(name string, s3 etcdv1beta2.S3BackupSource) *etcdv1beta2.EtcdBackup {
		s3.Path, s3.Endpoint, s3.ForcePathStyle = "bucket/k", "http://127.0.0.1:1", true
		return &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Generation: 1},
			Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "mine"},
				BackupSource: etcdv1beta2.BackupSource{S3: &s3}, BackupPolicy: &etcdv1beta2.BackupPolicy{TimeoutInSecond: 2}},
		}
	}
	cases := []struct {
		backup         *etcdv1beta2.EtcdBackup
		reason, naming string
	}{
		{backupOf("ambient", etcdv1beta2.S3BackupSource{CredentialsSource: etcdv1beta2.S3CredentialsEnvironment}),
			etcdv1beta2.ReasonAmbientCredentialsRefused, "spec.s3.awsSecret"},
		{backupOf("short-key", etcdv1beta2.S3BackupSource{AWSSecret: "aws", EncryptionKeySecret: "short"}),
			etcdv1beta2.ReasonEncryptionKeyError, "spec.s3.encryptionKeySecret team-a/short"},
		{backupOf("no-key-secret", etcdv1beta2.S3BackupSource{AWSSecret: "aws", EncryptionKeySecret: "absent"}),
			etcdv1beta2.ReasonEncryptionKeyError, "spec.s3.encryptionKeySecret team-a/absent"},
	}
	objs := []client.Object{own, memberPodOf(own, "mine-0001", host),
		secret("aws", map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = a\naws_secret_access_key = b\n")}),
		secret("short", map[string][]byte{etcdv1beta2.EncryptionKeySecretKey: []byte(keyHex[:62])})}
	for _, c := range cases {
		objs = append(objs, c.backup)
	}
	c := fake.NewClientBuilder().WithScheme(fixture.Scheme()).WithObjects(objs...).WithStatusSubresource(&etcdv1beta2.EtcdBackup{}).Build()
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Recorder: rec, Now: time.Now,
		failures: map[client.ObjectKey]int{}, retryAt: map[client.ObjectKey]retryState{}, S3Access: testS3Access}

	for _, tc := range cases {
		t.Cleanup(func() { forgetBackupMetrics(tc.backup.Namespace, tc.backup.Name) })
		t.Run(tc.backup.Name, func(t *testing.T) {
			ctx := context.Background()
			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.backup)})
			var got etcdv1beta2.EtcdBackup
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.backup), &got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.naming) {
				t.Fatalf("condition %+v, want Succeeded=False %s naming %q", cond, tc.reason, tc.naming)
			}
			if strings.Contains(cond.Message, keyHex[:16]) {
				t.Errorf("the condition shows the key: %q", cond.Message)
			}
			if n := accepted.Load(); n != 0 {
				t.Errorf("the cluster was dialled %d times", n)
			}
		})
	}
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, keyHex[:16]) {
			t.Errorf("event shows the key: %s", e)
		}
	}
}
