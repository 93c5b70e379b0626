package etcdadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of a client TLS Secret, as in CoreOS's operator: an EtcdCluster's operatorSecret
// and an EtcdBackup's clientTLSSecret hold them, and pods that dial etcd (backup pods,
// the recovery copy step) get the Secret mounted as files of these names.
const (
	ClientCertKey = "etcd-client.crt"
	ClientKeyKey  = "etcd-client.key"
	ClientCAKey   = "etcd-client-ca.crt"
)

// ClientTLS builds the client TLS config from the three files of a client TLS Secret.
// source names where they came from, for errors; errors name keys, never contents.
func ClientTLS(files map[string][]byte, source string) (*tls.Config, error) {
	for _, k := range []string{ClientCertKey, ClientKeyKey, ClientCAKey} {
		if len(files[k]) == 0 {
			return nil, fmt.Errorf("%s has no key %q", source, k)
		}
	}
	cert, err := tls.X509KeyPair(files[ClientCertKey], files[ClientKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s: bad certificate or key: %w", source, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files[ClientCAKey]) {
		return nil, fmt.Errorf("%s: %q holds no PEM certificate", source, ClientCAKey)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLSFromSecret reads a client TLS Secret through c (the operator reads Secrets
// uncached) and builds the config.
func ClientTLSFromSecret(ctx context.Context, c client.Reader, namespace, name string) (*tls.Config, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("read client TLS secret %s/%s: %w", namespace, name, err)
	}
	return ClientTLS(s.Data, fmt.Sprintf("client TLS secret %s/%s", namespace, name))
}

// ClientTLSFromDir builds the config from a client TLS Secret mounted at dir, as the
// backup pod and the recovery copy step get it.
func ClientTLSFromDir(dir string) (*tls.Config, error) {
	files := map[string][]byte{}
	for _, k := range []string{ClientCertKey, ClientKeyKey, ClientCAKey} {
		b, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil {
			return nil, fmt.Errorf("client TLS in %s: %w", dir, err)
		}
		files[k] = b
	}
	return ClientTLS(files, "client TLS in "+dir)
}
