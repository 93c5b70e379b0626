package etcdbackup

import (
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
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
	cases := []refusal{
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
	rec := checkRefusals(t, objs, cases, accepted, func(t *testing.T, cond *metav1.Condition) {
		if strings.Contains(cond.Message, keyHex[:16]) {
			t.Errorf("the condition shows the key: %q", cond.Message)
		}
	})
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, keyHex[:16]) {
			t.Errorf("event shows the key: %s", e)
		}
	}
}
