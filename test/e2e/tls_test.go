package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestTLS runs a cluster with CoreOS's spec.TLS.static (peer, server and operator
// Secrets): the members serve only https on both ports and require client certificates,
// the operator manages membership over TLS (scale up through a learner, scale down,
// replace a deleted member), and an EtcdBackup with clientTLSSecret reaches it.
func TestTLS(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()
	const name = "tls"
	pki := staticTLSSecrets(t, e, name)
	c := newCluster(name, 3)
	c.Spec.TLS = framework.StaticTLS("tls-peer", "tls-server", "tls-operator")
	e.Create(c)

	cfg := pki.ClientConfig(t)
	created := time.Now()
	e.WaitAvailableTLS(name, 3, cfg, 120*time.Second)
	t.Logf("3 TLS members available after %v", time.Since(created).Round(time.Millisecond))
	checkTLSURLs(t, e, name, cfg, 3)

	t.Run("both ports serve only TLS with client certificates", func(t *testing.T) {
		for pod, p := range e.MemberPods(name) {
			ip := p.Status.PodIP
			// Client port: the server certificate, and a client certificate is required.
			checkTLSPort(t, pod+" client", net.JoinHostPort(ip, "2379"), cfg, pki.NoCertConfig(), name+" server")
			// Peer port: the peer certificate, and --peer-client-cert-auth is on.
			checkTLSPort(t, pod+" peer", net.JoinHostPort(ip, "2380"), cfg, pki.NoCertConfig(), name+" peer")
		}
	})

	cli := e.EtcdClientTLS(name, cfg)
	t.Run("put/get over TLS; no certificate or plain http refused", func(t *testing.T) {
		e.Eventually(30*time.Second, "put/get through the client service over TLS", func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := cli.Put(cctx, "secure", "hello"); err != nil {
				return err
			}
			r, err := cli.Get(cctx, "secure")
			if err != nil {
				return err
			}
			if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "hello" {
				return fmt.Errorf("got %v", r.Kvs)
			}
			return nil
		})
		writeKeys(e, cli, 50, "/data", "value-")

		svc := fmt.Sprintf("%s-client.default.svc:2379", name)
		for _, tc := range []struct {
			what string
			ep   string
			tls  *tls.Config
		}{
			{"https without a client certificate", "https://" + svc, pki.NoCertConfig()},
			{"plain http", "http://" + svc, nil},
		} {
			if err := refusedPut(tc.ep, tc.tls); err != nil {
				t.Errorf("%s: %v", tc.what, err)
			}
		}
		// The refused writes did not land.
		r, err := cli.Get(ctx, "intruder")
		if err != nil || len(r.Kvs) != 0 {
			t.Errorf("refused clients' key: %v %v", r, err)
		}
	})

	before, err := e.MembersTLS(name, cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("scale up to 4 through a learner over TLS", func(t *testing.T) {
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
		e.WaitAvailableTLS(name, 4, cfg, 120*time.Second)
		after, err := e.MembersTLS(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for id, n := range memberIDs(before) {
			if memberIDs(after)[id] != n {
				t.Errorf("original member %s (%x) changed during scale up", n, id)
			}
		}
		if !framework.HasAny(e.EventReasons(name), "MemberPromoted") {
			t.Errorf("no learner was promoted: events %v", e.EventReasons(name))
		}
		checkTLSURLs(t, e, name, cfg, 4)
	})

	t.Run("scale down to 3 over TLS", func(t *testing.T) {
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
		e.WaitAvailableTLS(name, 3, cfg, 120*time.Second)
		e.Eventually(30*time.Second, "removed member's pod gone", func() error {
			if n := len(e.MemberPods(name)); n != 3 {
				return fmt.Errorf("%d member pods", n)
			}
			return nil
		})
		r, err := cli.Get(ctx, "secure")
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("data after scale down: %v %v", r, err)
		}
	})

	t.Run("deleted member replaced over TLS", func(t *testing.T) {
		victim, id := nonLeaderTLS(t, e, name, cfg)
		p := e.MemberPods(name)[victim]
		if err := e.C.Delete(ctx, &p); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		e.Eventually(120*time.Second, fmt.Sprintf("member %s (%x) replaced", victim, id), func() error {
			ms, err := e.MembersTLS(name, cfg)
			if err != nil {
				return err
			}
			for _, m := range ms {
				if m.ID == id || m.Name == victim {
					return fmt.Errorf("old member %s (%x) still listed", victim, id)
				}
			}
			if len(ms) != 3 {
				return fmt.Errorf("%d members", len(ms))
			}
			return nil
		})
		e.WaitAvailableTLS(name, 3, cfg, 120*time.Second)
		if !framework.HasAny(e.EventReasons(name), "MemberReplaced") {
			t.Errorf("no MemberReplaced event: %v", e.EventReasons(name))
		}
		checkTLSURLs(t, e, name, cfg, 3)
		r, err := cli.Get(ctx, "/data/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || r.Count != 50 {
			t.Errorf("keys after replacement: %v %v", r, err)
		}
	})

	t.Run("backup to S3 with clientTLSSecret", func(t *testing.T) {
		b := startBackupStore(t, e)
		ep := fmt.Sprintf("https://%s-client.default.svc:2379", name)
		eb := b.newBackup("tls-oneshot", name, "tls/oneshot.db", "aws", nil)
		eb.Spec.EtcdEndpoints = []string{ep}
		eb.Spec.ClientTLSSecret = "tls-operator"
		b.Create(eb)
		// Without the certificate the same backup must fail, not hang or succeed.
		bad := b.newBackup("tls-nocert", name, "tls/nocert.db", "aws", &etcdv1beta2.BackupPolicy{TimeoutInSecond: 5})
		bad.Spec.EtcdEndpoints = []string{ep}
		b.Create(bad)

		got := b.waitCondition(t, "tls-oneshot", metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 60*time.Second)
		if !got.Status.Succeeded || got.Status.EtcdVersion != "3.6.16" || got.Status.EtcdRevision < 50 || got.Status.LastSuccessDate.IsZero() {
			t.Errorf("status %+v", got.Status)
		}
		rev, total := b.snapshotStatus(t, "tls/oneshot.db")
		if total < 51 || rev < got.Status.EtcdRevision {
			t.Errorf("snapshot holds revision %d and %d keys; status says revision %d, 51 keys were written", rev, total, got.Status.EtcdRevision)
		}

		b.Eventually(60*time.Second, "backup without client certificate failed", func() error {
			st := b.getBackup(t, "tls-nocert").Status
			for _, c := range st.Conditions {
				if c.Type == etcdv1beta2.BackupConditionSucceeded && c.Status == metav1.ConditionFalse {
					// Said as a TLS problem, not as the timeout it ran into.
					if c.Reason != etcdv1beta2.ReasonTLSError {
						return fmt.Errorf("reason %s: %s", c.Reason, c.Message)
					}
					return nil
				}
			}
			return fmt.Errorf("status %+v", st)
		})
		st := b.getBackup(t, "tls-nocert").Status
		if st.Succeeded || st.Reason == "" {
			t.Errorf("backup without a client certificate: status %+v", st)
		}
		t.Logf("backup without a client certificate failed: %s", st.Reason)
		if objs, err := b.store.List(ctx, "tls/nocert"); err != nil || len(objs) != 0 {
			t.Errorf("backup without a client certificate stored %v (list: %v)", objs, err)
		}
	})
}

// checkTLSURLs asserts etcd's own member list: size members, every peer and client URL
// https on the member's DNS name under the bench's domain.
func checkTLSURLs(t *testing.T, e *framework.Env, name string, cfg *tls.Config, size int) {
	t.Helper()
	ms, err := e.MembersTLS(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != size {
		t.Fatalf("%d members, want %d", len(ms), size)
	}
	for _, m := range ms {
		host := fmt.Sprintf("%s.%s.default.svc.%s", m.Name, name, framework.BenchClusterDomain)
		if len(m.PeerURLs) == 0 || len(m.ClientURLs) == 0 {
			t.Errorf("member %s (%x) lists peer URLs %v, client URLs %v", m.Name, m.ID, m.PeerURLs, m.ClientURLs)
		}
		for _, u := range append(append([]string{}, m.PeerURLs...), m.ClientURLs...) {
			pu, err := url.Parse(u)
			if err != nil || pu.Scheme != "https" || pu.Hostname() != host {
				t.Errorf("member %s URL %q: want https://%s:<port>", m.Name, u, host)
			}
		}
	}
}

// checkTLSPort asserts that addr speaks TLS with a certificate named wantCN signed by
// the cluster CA, answers a request made with the client certificate, and refuses one
// made without it.
func checkTLSPort(t *testing.T, what, addr string, withCert, noCert *tls.Config, wantCN string) {
	t.Helper()
	get := func(cfg *tls.Config) (*http.Response, error) {
		cfg = cfg.Clone()
		// Dialled by IP: the certificates name DNS names only (and 127.0.0.1), so the name
		// is checked by hand below rather than by hostname verification.
		cfg.InsecureSkipVerify = true
		hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get("https://" + addr + "/version")
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	var resp *http.Response
	if err := framework.Poll(10*time.Second, func() (err error) { resp, err = get(withCert); return err }); err != nil {
		t.Errorf("%s (%s): https with a client certificate: %v", what, addr, err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s (%s): /version answered %s", what, addr, resp.Status)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if leaf.Subject.CommonName != wantCN {
		t.Errorf("%s (%s) presented %q, want %q", what, addr, leaf.Subject.CommonName, wantCN)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: withCert.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s (%s): certificate not from the cluster CA: %v", what, addr, err)
	}
	if _, err := get(noCert); err == nil {
		t.Errorf("%s (%s): a request without a client certificate was answered", what, addr)
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	if resp, err := hc.Get("http://" + addr + "/version"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s (%s): plain http answered %s", what, addr, resp.Status)
		}
	}
}

// refusedPut expects a put through ep with cfg to be refused by the server: ep must
// accept a TCP connection (so a name that does not resolve or a port nobody listens on
// is not taken for a refusal), and the put must then fail within a few seconds.
func refusedPut(ep string, cfg *tls.Config) error {
	u, err := url.Parse(ep)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 4*time.Second)
	if err != nil {
		return fmt.Errorf("%s does not accept connections, so nothing was refused: %w", ep, err)
	}
	conn.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: cfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil // refused at dial: fine
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "intruder", "x"); err == nil {
		return fmt.Errorf("put through %s succeeded", ep)
	}
	return nil
}

// nonLeaderTLS picks a member pod that is not the leader, asking each over TLS.
func nonLeaderTLS(t *testing.T, e *framework.Env, name string, cfg *tls.Config) (pod string, id uint64) {
	t.Helper()
	e.Eventually(30*time.Second, "a non-leader member", func() error {
		for _, ep := range e.MemberEndpointsTLS(name) {
			st, err := statusTLS(ep, cfg)
			if err != nil {
				return err
			}
			if st.Leader != 0 && st.Header.MemberId != st.Leader {
				u, _ := url.Parse(ep)
				pod, _, _ = strings.Cut(u.Hostname(), ".")
				id = st.Header.MemberId
				return nil
			}
		}
		return fmt.Errorf("every member is the leader or has none")
	})
	return pod, id
}

func statusTLS(ep string, cfg *tls.Config) (*clientv3.StatusResponse, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: cfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return cli.Status(ctx, ep)
}

func memberIDs(ms []*etcdserverpb.Member) map[uint64]string {
	out := map[uint64]string{}
	for _, m := range ms {
		out[m.ID] = m.Name
	}
	return out
}
