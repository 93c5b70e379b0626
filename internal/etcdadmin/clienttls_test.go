package etcdadmin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/etcd-operator/etcd-operator/internal/test/testpki"
)

func clientTLSFiles(t *testing.T) map[string][]byte {
	ca := testpki.NewCA(t, "etcd-ca")
	cert, key := ca.Issue(t, "operator", nil, nil)
	return map[string][]byte{ClientCertKey: cert, ClientKeyKey: key, ClientCAKey: ca.PEM}
}

func TestClientTLS(t *testing.T) {
	files := clientTLSFiles(t)
	cfg, err := ClientTLS(files, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
		t.Fatalf("config lacks the certificate or the CA: %+v", cfg)
	}

	for _, tc := range []struct {
		name string
		edit func(map[string][]byte)
		want string
	}{
		{"no key", func(f map[string][]byte) { delete(f, ClientKeyKey) }, `test has no key "etcd-client.key"`},
		{"bad pair", func(f map[string][]byte) { f[ClientKeyKey] = []byte("x") }, "test: bad certificate or key"},
		{"bad CA", func(f map[string][]byte) { f[ClientCAKey] = []byte("x") }, `test: "etcd-client-ca.crt" holds no PEM certificate`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := clientTLSFiles(t)
			tc.edit(f)
			_, err := ClientTLS(f, "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("error shows the Secret's contents: %v", err)
			}
		})
	}
}

func TestClientTLSFromSecretAndDir(t *testing.T) {
	files := clientTLSFiles(t)
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op"}, Data: files,
	}).Build()
	if _, err := ClientTLSFromSecret(context.Background(), c, "ns", "op"); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientTLSFromSecret(context.Background(), c, "ns", "absent"); err == nil || !strings.Contains(err.Error(), "read client TLS secret ns/absent") {
		t.Fatalf("missing Secret: error %v", err)
	}

	dir := t.TempDir()
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ClientTLSFromDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ClientCAKey)); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientTLSFromDir(dir); err == nil || !strings.Contains(err.Error(), "client TLS in "+dir) {
		t.Fatalf("missing file: error %v", err)
	}
}
