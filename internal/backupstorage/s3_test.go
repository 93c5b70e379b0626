package backupstorage

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
)

func TestOpenS3(t *testing.T) {
	secret := func(name, creds string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Data: map[string][]byte{backup.AWSCredentialsKey: []byte(creds)}}
	}
	c := fake.NewClientBuilder().WithObjects(
		secret("aws", "[default]\naws_access_key_id = id\naws_secret_access_key = sekrit\n"),
		secret("half", "[default]\naws_access_key_id = id\n"),
	).Build()
	ctx := context.Background()

	s3 := &etcdv1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: "aws", Endpoint: "http://minio:9000", ForcePathStyle: true}
	if _, err := OpenS3(ctx, c, "ns", s3, "bucket"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secret, endpoint, want string
	}{
		{"absent", "", etcdv1beta2.ReasonSecretError},
		{"half", "", etcdv1beta2.ReasonSecretError},
		{"aws", "ftp://minio", etcdv1beta2.ReasonBackupInvalidSpec},
	} {
		s := &etcdv1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: tc.secret, Endpoint: tc.endpoint}
		_, err := OpenS3(ctx, c, "ns", s, "bucket")
		var se *Error
		if !errors.As(err, &se) || se.Reason != tc.want {
			t.Errorf("secret %s, endpoint %q: error %v, want reason %s", tc.secret, tc.endpoint, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("error shows the Secret's contents: %v", err)
		}
	}
}
