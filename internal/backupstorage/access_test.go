package backupstorage

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupcrypt"
)

func reasonOf(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return se.Reason
	}
	return ""
}

// The operator's own identity serves a tenant's object only when the operator was
// started to allow it; otherwise the refusal names the field to set instead.
func TestAmbientCredentialsNeedTheOperatorsConsent(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	s3 := &etcdv1beta2.S3BackupSource{Path: "b/k", CredentialsSource: etcdv1beta2.S3CredentialsEnvironment}
	_, err := S3Access{}.Open(context.Background(), c, "ns", s3, "b")
	if reasonOf(err) != etcdv1beta2.ReasonAmbientCredentialsRefused || !strings.Contains(err.Error(), "spec.s3.awsSecret") {
		t.Fatalf("without consent: %v", err)
	}
	if _, err := OpenS3(context.Background(), c, "ns", s3, "b"); reasonOf(err) != etcdv1beta2.ReasonAmbientCredentialsRefused {
		t.Fatalf("OpenS3 lends the operator's identity: %v", err)
	}
	if _, err := (S3Access{AllowAmbient: true}).Open(context.Background(), c, "ns", s3, "b"); err != nil {
		t.Fatalf("with consent: %v", err)
	}
}

func TestEncryptionKeySecret(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: data}
	}
	c := fake.NewClientBuilder().WithObjects(
		secret("aws", map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = id\naws_secret_access_key = s\n")}),
		secret("good", map[string][]byte{"key": []byte(key + "\n")}),
		secret("short", map[string][]byte{"key": []byte(key[:40])}),
		secret("other-key", map[string][]byte{"password": []byte(key)}),
		// A placeholder: all zeros, raw or hex; and a key one byte too long.
		secret("zero", map[string][]byte{"key": make([]byte, 32)}),
		secret("zero-hex", map[string][]byte{"key": []byte(strings.Repeat("00", 32))}),
		secret("long", map[string][]byte{"key": append([]byte(key[:32]), 'x')}),
	).Build()
	ctx := context.Background()
	if k, err := ReadEncryptionKey(ctx, c, "ns", "good"); err != nil || k == nil {
		t.Fatalf("good key: %v", err)
	}
	for _, name := range []string{"absent", "short", "other-key", "zero", "zero-hex", "long"} {
		s3 := &etcdv1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", EncryptionKeySecret: name}
		_, err := OpenS3(ctx, c, "ns", s3, "b")
		if reasonOf(err) != etcdv1beta2.ReasonEncryptionKeyError || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want EncryptionKeyError naming the Secret", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), key[:16]) || strings.Contains(err.Error(), "0000000000")) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
		// The message names the Secret's key that holds it, for every malformed key.
		if name != "absent" && name != "other-key" && !strings.Contains(err.Error(), `key "key"`) {
			t.Errorf("%s: %v does not name the Secret's key \"key\"", name, err)
		}
	}
}

// An encrypted backup bound elsewhere has a reason of its own.
func TestMisplacedBackupReason(t *testing.T) {
	for _, err := range []error{fmt.Errorf("s3://b/k: %w: it holds revision 1, not 2", backupcrypt.ErrMisplaced), backupcrypt.ErrUnbound} {
		if got := Reason(err); got != etcdv1beta2.ReasonBackupMisplaced {
			t.Errorf("Reason(%v) = %s, want %s", err, got, etcdv1beta2.ReasonBackupMisplaced)
		}
	}
}

func TestCheckS3SourceCredentials(t *testing.T) {
	env := etcdv1beta2.S3CredentialsEnvironment
	for _, tc := range []struct {
		s3         etcdv1beta2.S3BackupSource
		wantReason string
	}{
		{etcdv1beta2.S3BackupSource{Path: "b/k", CredentialsSource: env}, ""},
		{etcdv1beta2.S3BackupSource{Path: "b/k", CredentialsSource: env, AWSSecret: "aws"}, etcdv1beta2.ReasonBackupInvalidSpec},
		{etcdv1beta2.S3BackupSource{Path: "b/k", CredentialsSource: etcdv1beta2.S3CredentialsSecret}, etcdv1beta2.ReasonBackupInvalidSpec},
	} {
		if reason, msg := CheckS3Source(&tc.s3, "storageType"); reason != tc.wantReason {
			t.Errorf("%+v: %s %q, want %q", tc.s3, reason, msg, tc.wantReason)
		}
	}
}

// A tenant's endpoint at loopback, link-local or the API server's address is refused
// with a reason of its own, before anything is dialled; the operator's exceptions pass.
func TestS3EndpointEgress(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "aws"},
		Data: map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = id\naws_secret_access_key = s\n")}}).Build()
	api := netip.MustParseAddr("10.96.0.1")
	a := S3Access{DenyAddrs: []netip.Addr{api}, AllowEndpoints: []string{"127.0.0.1:9000"}}
	for _, ep := range []string{"http://127.0.0.1:9001", "169.254.169.254:80", "https://10.96.0.1", "http://localhost:9000"} {
		s3 := &etcdv1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", Endpoint: ep}
		_, err := a.Open(context.Background(), c, "ns", s3, "bkt")
		if reasonOf(err) != etcdv1beta2.ReasonS3EndpointRefused || !strings.Contains(err.Error(), "spec.s3.endpoint") {
			t.Errorf("%s: %v, want %s naming spec.s3.endpoint", ep, err, etcdv1beta2.ReasonS3EndpointRefused)
		}
	}
	s3 := &etcdv1beta2.S3BackupSource{Path: "b/k", AWSSecret: "aws", Endpoint: "http://127.0.0.1:9000"}
	if _, err := a.Open(context.Background(), c, "ns", s3, "bkt"); err != nil {
		t.Errorf("allowed endpoint: %v", err)
	}
	for err, want := range map[error]string{
		fmt.Errorf("x: %w", backup.ErrEndpointRefused): etcdv1beta2.ReasonS3EndpointRefused,
		fmt.Errorf("x: %w", backup.ErrLimitExceeded):   etcdv1beta2.ReasonLimitExceeded,
		fmt.Errorf("x: %w", backup.ErrStalled):         etcdv1beta2.ReasonTimeout,
	} {
		if got := Reason(err); got != want {
			t.Errorf("Reason(%v) = %s, want %s", err, got, want)
		}
	}
}
