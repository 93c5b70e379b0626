package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TLS clients shared by the tests of built-in and cert-manager issuing.

// followedTLS is a client's TLS configuration that follows a cluster's client Secret
// (built-in issuing's <cluster>-builtin-tls-client, cert-manager issuing's
// <cluster>-cm-tls-client) as a client mounting it does when the kubelet updates the
// files: its certificate and the CA bundle it verifies members with are reread every
// second.
type followedTLS struct {
	mu    sync.Mutex
	cert  *tls.Certificate
	roots *x509.CertPool
	stop  chan struct{}
	done  chan struct{}
}

// followClientSecret follows built-in issuing's client Secret of cluster.
func followClientSecret(t *testing.T, e *framework.Env, cluster string) *followedTLS {
	return followSecret(t, e, etcdcluster.BuiltinClientSecret(cluster))
}

// followSecret follows the client Secret secret (keys etcd-client.crt, etcd-client.key,
// etcd-client-ca.crt) of namespace default.
func followSecret(t *testing.T, e *framework.Env, secret string) *followedTLS {
	f := &followedTLS{stop: make(chan struct{}), done: make(chan struct{})}
	read := func() error {
		var s corev1.Secret
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: secret}, &s); err != nil {
			return err
		}
		cert, err := tls.X509KeyPair(s.Data[etcdadmin.ClientCertKey], s.Data[etcdadmin.ClientKeyKey])
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(s.Data[etcdadmin.ClientCAKey]) {
			return errors.New("no CA in the client Secret")
		}
		f.mu.Lock()
		f.cert, f.roots = &cert, roots
		f.mu.Unlock()
		return nil
	}
	e.Eventually(120*time.Second, "the cluster's client Secret", read)
	go func() {
		defer close(f.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-tick.C:
				_ = read() // a failed read keeps the files as they were
			}
		}
	}()
	t.Cleanup(func() { close(f.stop); <-f.done })
	return f
}

// config verifies the members' certificates (name and chain) against the bundle read
// last, and presents the certificate read last.
func (f *followedTLS) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.cert, nil
		},
		// Verified below against the bundle of the moment, which a static RootCAs
		// could not follow.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("no server certificate")
			}
			f.mu.Lock()
			roots := f.roots
			f.mu.Unlock()
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: cs.ServerName, Roots: roots, Intermediates: inter})
			return err
		},
	}
}
