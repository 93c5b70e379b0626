package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/certmanager"
	"github.com/etcd-operator/etcd-operator/internal/test/cmissuer"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// installCertManagerCRDs installs cert-manager's Certificate and Issuer CRDs, the
// plain copies its module ships (deploy/crds, no templating), in the bench's API server.
func installCertManagerCRDs(t *testing.T, e *framework.Env) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager")
	cmd.Dir = framework.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("find cert-manager's module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	if _, err := envtest.InstallCRDs(e.Bench.RestConfig(), envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(dir, "cert-manager.io_certificates.yaml"), filepath.Join(dir, "cert-manager.io_issuers.yaml")},
		ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("install cert-manager CRDs: %v", err)
	}
}

// startTestIssuer runs the test CA issuer (internal/test/cmissuer; cert-manager's
// controller is not built here) in this process against the bench's API server until
// the test ends.
func startTestIssuer(t *testing.T, e *framework.Env, name string) *cmissuer.Issuer {
	t.Helper()
	w, err := client.NewWithWatch(e.Bench.RestConfig(), client.Options{Scheme: framework.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	is := &cmissuer.Issuer{C: w, Namespace: "default", Name: name}
	if err := is.Install(context.Background(), name+"-ca"); err != nil {
		t.Fatalf("install the test issuer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		is.Run(ctx, w, time.Second, func(err error) { t.Logf("test issuer: %v", err) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return is
}

// cmGeneration is the generation of cert-manager certificates in effect.
func cmGeneration(e *framework.Env, cluster string) int {
	var s corev1.Secret
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: certmanager.StateSecretName(cluster)}, &s); err != nil {
		return 0
	}
	var g int
	_, _ = fmt.Sscanf(string(s.Data["generation"]), "%d", &g)
	return g
}

// TestCertManagerTLS turns cert-manager issuing on (spec.TLS.certManager) for a running
// 3-member plaintext cluster on claims, under writes: it waits, saying which Certificate
// is not ready, until an issuer fulfils the Certificates it made (the test CA issuer,
// running in the test process against the bench's API server, stands in for
// cert-manager's controller), then takes the plaintext-to-TLS path; a forced renewal
// (new keys and certificates by the same CA in cert-manager's Secrets) rolls every
// member onto a new generation in one step. A plaintext writer runs until members serve
// TLS, then a TLS writer following the clients' Secret: no acknowledged write fails or
// is lost, and every member keeps its ID.
func TestCertManagerTLS(t *testing.T) {
	e := framework.Setup(t)
	installCertManagerCRDs(t, e)
	// The operator watches Certificates where their CRD is served when it starts (a
	// later install is picked up by the 30 s resync only): restarted as an operator
	// installed after cert-manager.
	e.StopOperatorNow()
	e.StartOperator()

	const name = "cmtls"
	before := startClaimedCluster(t, e, name)
	plain := e.StartLoad(name, loadRate)
	flowing(t, plain, 2*loadRate)

	const issuer = "e2e-ca"
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.TLS = &etcdv1beta2.TLSPolicy{CertManager: &etcdv1beta2.CertManagerTLS{IssuerRef: etcdv1beta2.CertManagerIssuerRef{Name: issuer}}}
	})
	// No issuer yet: the cluster says what it waits for and keeps serving plaintext.
	e.Eventually(60*time.Second, "CertificatesValid False, CertificateNotReady naming a Certificate", func() error {
		msg := conditionReason(e.Cluster(name), etcdv1beta2.ClusterConditionCertificatesValid)
		if !strings.HasPrefix(msg, etcdv1beta2.ReasonCertificateNotReady+": ") || !strings.Contains(msg, `Certificate "cmtls-cm-`) {
			return fmt.Errorf("CertificatesValid: %q", msg)
		}
		return nil
	})
	flowing(t, plain, loadRate)

	start := time.Now()
	startTestIssuer(t, e, issuer)
	cfg := followSecret(t, e, etcdcluster.CertManagerClientSecret(name)).config()
	waitServingTLSClients(e, name)
	secure := e.StartLoadTLS(name, loadRate, cfg)
	flowing(t, secure, 2*loadRate)
	plainKeys := plain.AckedKeys()
	plainRes := verifyLoad(t, plain)
	onTLS := func() error {
		ms, err := e.MembersTLS(name, cfg)
		if err != nil {
			return err
		}
		if err := peersOnTLS(ms); err != nil {
			return err
		}
		cl := e.Cluster(name)
		if !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionSpecApplied) {
			return fmt.Errorf("SpecApplied: %s", conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied))
		}
		if !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionCertificatesValid) {
			return fmt.Errorf("CertificatesValid: %s", conditionReason(cl, etcdv1beta2.ClusterConditionCertificatesValid))
		}
		return nil
	}
	e.Eventually(420*time.Second, "every member on TLS, certificates valid", onTLS)
	t.Logf("plaintext to cert-manager TLS in %v; plaintext load %s", time.Since(start).Round(time.Second), plainRes)
	checkKeysTLS(t, e, name, cfg, plainKeys)
	gen := cmGeneration(e, name)
	if gen != 1 {
		t.Errorf("generation %d after turning TLS on, want 1", gen)
	}

	// The members present what cert-manager wrote.
	var server corev1.Secret
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: certmanager.CertificateName(name, certissue.KindServer)}, &server); err != nil {
		t.Fatal(err)
	}
	// presented is the serial every member's client port presents ("" and an error
	// when they differ or one cannot be reached).
	presented := func() (string, error) {
		serials := map[string]bool{}
		for n, p := range e.MemberPods(name) {
			d := &net.Dialer{Timeout: 5 * time.Second}
			// Dialled by IP, verified for the member's name (pod IPs are in no certificate).
			mc := cfg.Clone()
			mc.ServerName = fmt.Sprintf("%s.%s.default.svc.%s", n, name, framework.BenchClusterDomain)
			conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(p.Status.PodIP, "2379"), mc)
			if err != nil {
				return "", fmt.Errorf("member %s: %w", n, err)
			}
			serials[conn.ConnectionState().PeerCertificates[0].SerialNumber.String()] = true
			_ = conn.Close()
		}
		if len(serials) != 1 {
			return "", fmt.Errorf("members present %d certificates", len(serials))
		}
		for s := range serials {
			return s, nil
		}
		return "", nil
	}
	leaf, err := certissue.ParseCert(server.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	// Polled: the member restarted last may still be starting to listen.
	presents := func(t *testing.T, serial string) {
		t.Helper()
		e.Eventually(60*time.Second, "every member presenting serial "+serial, func() error {
			got, err := presented()
			if err != nil {
				return err
			}
			if got != serial {
				return fmt.Errorf("members present serial %s", got)
			}
			return nil
		})
	}
	presents(t, leaf.SerialNumber.String())

	t.Run("a forced renewal rolls every member onto new certificates", func(t *testing.T) {
		start := time.Now()
		for _, k := range certmanager.Kinds {
			if err := cmissuer.ForceRenewal(context.Background(), e.C, "default", certmanager.CertificateName(name, k)); err != nil {
				t.Fatal(err)
			}
		}
		e.Eventually(60*time.Second, "a new generation", func() error {
			if g := cmGeneration(e, name); g <= gen {
				return fmt.Errorf("generation %d", g)
			}
			return nil
		})
		if g := cmGeneration(e, name); g != gen+1 {
			t.Errorf("generation %d after a renewal by the same CA, want %d (one step, no CA change)", g, gen+1)
		}
		peer, srv, _ := certmanager.GenerationSecrets(name, gen+1)
		e.Eventually(420*time.Second, "every member on the renewed certificates", func() error {
			pods := e.MemberPods(name)
			if len(pods) != 3 {
				return fmt.Errorf("%d member pods", len(pods))
			}
			for n, p := range pods {
				if !podIsReady(p) {
					return fmt.Errorf("pod %s not Ready", n)
				}
				for _, v := range p.Spec.Volumes {
					if v.Secret != nil && ((v.Name == "member-peer-tls" && v.Secret.SecretName != peer) || (v.Name == "member-server-tls" && v.Secret.SecretName != srv)) {
						return fmt.Errorf("pod %s mounts %s", n, v.Secret.SecretName)
					}
				}
			}
			return onTLS()
		})
		t.Logf("renewal rolled out in %v", time.Since(start).Round(time.Second))
		if err := e.C.Get(context.Background(), client.ObjectKeyFromObject(&server), &server); err != nil {
			t.Fatal(err)
		}
		renewed, err := certissue.ParseCert(server.Data["tls.crt"])
		if err != nil {
			t.Fatal(err)
		}
		if renewed.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
			t.Fatal("the test issuer did not renew the server certificate")
		}
		presents(t, renewed.SerialNumber.String())
		var cert cmv1.Certificate
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: certmanager.CertificateName(name, certissue.KindServer)}, &cert); err != nil {
			t.Fatal(err)
		}
		if cert.Status.Revision == nil || *cert.Status.Revision < 2 {
			t.Errorf("server Certificate revision %v, want 2 or more", cert.Status.Revision)
		}
		flowing(t, secure, 2*loadRate)
	})

	after, err := e.MembersTLS(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(memberIDs(after)) != fmt.Sprint(framework.MemberIDs(before)) {
		t.Errorf("members changed: %v -> %v (want every member restarted on its claim)", framework.MemberIDs(before), memberIDs(after))
	}
	t.Logf("TLS load: %s", verifyLoad(t, secure))
	t.Logf("event reasons: %v", e.EventReasons(name))
}
