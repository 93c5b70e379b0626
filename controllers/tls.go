package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the operator's client certificate Secret, as in CoreOS's operator.
const (
	secretClientCert = "etcd-client.crt"
	secretClientKey  = "etcd-client.key"
	secretClientCA   = "etcd-client-ca.crt"
)

// loadClientTLS builds a client TLS config from a Secret. Errors name the Secret and key,
// never the contents.
func loadClientTLS(ctx context.Context, c client.Reader, namespace, name string) (*tls.Config, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("read client TLS secret %s/%s: %w", namespace, name, err)
	}
	for _, k := range []string{secretClientCert, secretClientKey, secretClientCA} {
		if len(s.Data[k]) == 0 {
			return nil, fmt.Errorf("client TLS secret %s/%s has no key %q", namespace, name, k)
		}
	}
	cert, err := tls.X509KeyPair(s.Data[secretClientCert], s.Data[secretClientKey])
	if err != nil {
		return nil, fmt.Errorf("client TLS secret %s/%s: bad certificate or key: %w", namespace, name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data[secretClientCA]) {
		return nil, fmt.Errorf("client TLS secret %s/%s: %q holds no PEM certificate", namespace, name, secretClientCA)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
