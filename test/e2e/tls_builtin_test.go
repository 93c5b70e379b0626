package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// builtinGeneration is the generation of certificates the cluster's CA Secret says is
// in effect, and the CA bundle it trusts.
func builtinGeneration(t *testing.T, e *framework.Env, cluster string) (int, []byte) {
	t.Helper()
	var s corev1.Secret
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: cluster + "-builtin-tls-ca"}, &s); err != nil {
		t.Fatal(err)
	}
	g, err := strconv.Atoi(string(s.Data[certissue.StateGeneration]))
	if err != nil {
		t.Fatal(err)
	}
	return g, s.Data[certissue.StateTrust]
}

// builtinState is the cluster's CA Secret, decoded.
func builtinState(t *testing.T, e *framework.Env, cluster string) certissue.State {
	t.Helper()
	var s corev1.Secret
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: cluster + "-builtin-tls-ca"}, &s); err != nil {
		t.Fatal(err)
	}
	st, err := certissue.DecodeState(s.Data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitOnGeneration waits until every member pod mounts generation gen's Secrets (or a
// later one's), is Ready, and the cluster is available over TLS.
func waitOnGeneration(t *testing.T, e *framework.Env, cluster string, gen int, cfg *tls.Config, timeout time.Duration) {
	t.Helper()
	e.Eventually(timeout, fmt.Sprintf("every member on certificate generation %d", gen), func() error {
		pods := e.MemberPods(cluster)
		if len(pods) != 3 {
			return fmt.Errorf("%d member pods", len(pods))
		}
		for n, p := range pods {
			if !podIsReady(p) {
				return fmt.Errorf("pod %s not Ready", n)
			}
			for _, v := range p.Spec.Volumes {
				if v.Secret == nil || (v.Name != "member-peer-tls" && v.Name != "member-server-tls") {
					continue
				}
				var g int
				if _, err := fmt.Sscanf(strings.TrimPrefix(v.Secret.SecretName, cluster+"-builtin-tls-"), "%d-", &g); err != nil || g < gen {
					return fmt.Errorf("pod %s mounts %s", n, v.Secret.SecretName)
				}
			}
		}
		return nil
	})
	e.WaitAvailableTLS(cluster, 3, cfg, 120*time.Second)
}

// TestBuiltinTLS runs a 3-member cluster (on claims) whose certificates the operator issues
// (spec.TLS.auto): it forms over TLS with a client following the cluster's client
// Secret, takes writes, reports CertificatesValid; a lifetime shortened in the spec
// renews every certificate at once and a renewal at two thirds of the new lifetime
// follows by itself; a CA rotation asked for by annotation takes three generations;
// members roll one at a time through each, keep their IDs, and a TLS writer following
// the client Secret loses no write.
func TestBuiltinTLS(t *testing.T) {
	e := framework.Setup(t)
	const name = "autotls"
	c := newCluster(name, 3)
	// A CA rotation waits caStepDwell between its steps for clients to reread their
	// Secret; short here, long enough to see it held (the operator wakes when it ends).
	dwell := &metav1.Duration{Duration: 20 * time.Second}
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{CAStepDwell: dwell}}
	// On claims, members restart in place (same ID, same data) for each generation.
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: claimSpec()}
	e.Create(c)

	follow := followClientSecret(t, e, name)
	cfg := follow.config()
	created := time.Now()
	e.WaitAvailableTLS(name, 3, cfg, 180*time.Second)
	t.Logf("3 members with built-in certificates available after %v", time.Since(created).Round(time.Second))
	checkTLSURLs(t, e, name, cfg, 3)
	before, err := e.MembersTLS(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gen0, trust0 := builtinGeneration(t, e, name)
	e.Eventually(60*time.Second, "CertificatesValid True", func() error {
		cl := e.Cluster(name)
		if !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionCertificatesValid) {
			return fmt.Errorf("CertificatesValid: %s", conditionReason(cl, etcdv1beta2.ClusterConditionCertificatesValid))
		}
		return nil
	})
	if cl := e.Cluster(name); cl.Spec.TLS.Static != nil {
		t.Errorf("the stored spec names static Secrets: %+v", cl.Spec.TLS.Static)
	}
	load := e.StartLoadTLS(name, loadRate, cfg)
	flowing(t, load, 2*loadRate)

	sameMembers := func(t *testing.T) {
		t.Helper()
		now, err := e.MembersTLS(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(memberIDs(now)) != fmt.Sprint(memberIDs(before)) {
			t.Errorf("members changed: %v -> %v (want every member restarted in place)", memberIDs(before), memberIDs(now))
		}
	}

	t.Run("a shorter lifetime renews at once, then again at two thirds of it", func(t *testing.T) {
		start := time.Now()
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
			// The shortest lifetime admission allows (5m, more than twice the dwell),
			// renewed with 4 minutes left: the unprompted renewal is due a minute after
			// the issue, by the time the generation has rolled out.
			c.Spec.TLS.Auto = &etcdv1beta2.AutoTLS{CertificateLifetime: &metav1.Duration{Duration: 5 * time.Minute},
				RenewBefore: &metav1.Duration{Duration: 4 * time.Minute}, CAStepDwell: dwell}
		})
		e.Eventually(60*time.Second, "a new generation", func() error {
			if g, _ := builtinGeneration(t, e, name); g <= gen0 {
				return fmt.Errorf("generation %d", g)
			}
			return nil
		})
		gen1, _ := builtinGeneration(t, e, name)
		waitOnGeneration(t, e, name, gen1, cfg, 300*time.Second)
		t.Logf("generation %d rolled out %v after the lifetime changed", gen1, time.Since(start).Round(time.Second))
		sameMembers(t)
		flowing(t, load, 2*loadRate)
		// Issued with 5 minutes to live and renewed with 4 left: a minute on.
		e.Eventually(420*time.Second, "a renewal nobody asked for", func() error {
			if g, _ := builtinGeneration(t, e, name); g <= gen1 {
				return fmt.Errorf("generation %d", g)
			}
			return nil
		})
		gen2, _ := builtinGeneration(t, e, name)
		waitOnGeneration(t, e, name, gen2, cfg, 300*time.Second)
		t.Logf("generation %d (renewed by itself) rolled out %v after the lifetime changed", gen2, time.Since(start).Round(time.Second))
		sameMembers(t)
		flowing(t, load, 2*loadRate)
	})

	t.Run("a CA rotation keeps clients working", func(t *testing.T) {
		start := time.Now()
		genStart, _ := builtinGeneration(t, e, name)
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[etcdv1beta2.AnnotationRotateCA] = "e2e"
			// Back to a lifetime that asks for no renewal while the rotation and the
			// checks after it run (a rotation goes before any renewal, and none is made
			// during one): the members are not rolled once a minute meanwhile.
			c.Spec.TLS.Auto = &etcdv1beta2.AutoTLS{CertificateLifetime: &metav1.Duration{Duration: time.Hour}, CAStepDwell: dwell}
		})
		// Three generations: both CAs trusted, the new one signing, the new one alone.
		sawBoth := false
		since := map[int]time.Time{} // when each generation started, as the CA Secret says
		e.Eventually(900*time.Second, "the new CA alone in the bundle, every member on it", func() error {
			g, trust := builtinGeneration(t, e, name)
			if st := builtinState(t, e, name); !st.Since.IsZero() {
				since[st.Generation] = st.Since
			}
			cas, err := certissue.ParseBundle(trust)
			if err != nil {
				return err
			}
			if len(cas) == 2 {
				sawBoth = true
			}
			if g < genStart+3 || len(cas) != 1 || certissue.SameBundle(trust, trust0) {
				return fmt.Errorf("generation %d, %d CAs trusted", g, len(cas))
			}
			for n, p := range e.MemberPods(name) {
				for _, v := range p.Spec.Volumes {
					if v.Name == "member-server-tls" && v.Secret != nil && !strings.HasPrefix(v.Secret.SecretName, fmt.Sprintf("%s-builtin-tls-%d-", name, g)) {
						return fmt.Errorf("pod %s mounts %s", n, v.Secret.SecretName)
					}
				}
				if !podIsReady(p) {
					return fmt.Errorf("pod %s not Ready", n)
				}
			}
			return nil
		})
		g, trust := builtinGeneration(t, e, name)
		waitOnGeneration(t, e, name, g, cfg, 120*time.Second)
		t.Logf("CA rotated through generations %d..%d in %v", genStart+1, g, time.Since(start).Round(time.Second))
		if !sawBoth {
			t.Log("never sampled the bundle holding both CAs (generations moved faster than the poll)")
		}
		// Switching to the new CA and dropping the old one each waited the dwell after
		// the step before (the CA Secret's times are the operator's own, second-precise).
		for _, gen := range []int{genStart + 2, genStart + 3} {
			a, okA := since[gen-1]
			b, okB := since[gen]
			switch {
			case !okA || !okB:
				t.Logf("did not sample the start of generations %d and %d", gen-1, gen)
			case b.Sub(a) < dwell.Duration-time.Second:
				t.Errorf("generation %d started %v after generation %d, within the CA step dwell %v", gen, b.Sub(a), gen-1, dwell.Duration)
			default:
				t.Logf("generation %d started %v after generation %d", gen, b.Sub(a), gen-1)
			}
		}
		// The members now present certificates of the new CA only.
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(trust0)
		old := cfg.Clone()
		old.VerifyConnection = nil
		old.InsecureSkipVerify = false
		old.RootCAs = roots
		if _, err := e.MembersTLS(name, old); err == nil {
			t.Error("a client trusting only the old CA still verifies the members")
		}
		_ = trust
		sameMembers(t)
		flowing(t, load, 2*loadRate)
	})

	res := verifyLoad(t, load)
	t.Logf("TLS load through the renewals and the CA rotation: %s", res)
	t.Logf("event reasons: %v", e.EventReasons(name))
}

// TestBuiltinTLSFromPlaintext turns built-in issuing on for a running 3-member plaintext
// cluster (with claims) under writes: it takes the plaintext-to-TLS path of static
// Secrets, three rolling steps; a plaintext writer runs until every member serves TLS
// clients, then a TLS writer following the clients' Secret; no acknowledged write of
// either fails or is lost, every member keeps its ID, and every peer URL ends https.
func TestBuiltinTLSFromPlaintext(t *testing.T) {
	e := framework.Setup(t)
	const name = "autotlsmove"
	before := startClaimedCluster(t, e, name)
	plain := e.StartLoad(name, loadRate)
	flowing(t, plain, 2*loadRate)
	start := time.Now()
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}} })
	cfg := followClientSecret(t, e, name).config()

	waitServingTLSClients(e, name)
	secure := e.StartLoadTLS(name, loadRate, cfg)
	flowing(t, secure, 2*loadRate)
	plainKeys := plain.AckedKeys()
	plainRes := verifyLoad(t, plain)
	e.Eventually(420*time.Second, "every member on TLS (peer URLs https, plaintext dropped)", func() error {
		ms, err := e.MembersTLS(name, cfg)
		if err != nil {
			return err
		}
		if err := allOnTLS(ms); err != nil {
			return err
		}
		if cl := e.Cluster(name); !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionSpecApplied) {
			return fmt.Errorf("SpecApplied: %s", conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied))
		}
		return nil
	})
	t.Logf("plaintext to built-in TLS in %v; plaintext load %s", time.Since(start).Round(time.Second), plainRes)
	after, err := e.MembersTLS(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(memberIDs(after)) != fmt.Sprint(framework.MemberIDs(before)) {
		t.Errorf("members changed: %v -> %v (want every member restarted on its claim)", framework.MemberIDs(before), memberIDs(after))
	}
	if cl := e.Cluster(name); !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionCertificatesValid) {
		t.Errorf("CertificatesValid: %s", conditionReason(cl, etcdv1beta2.ClusterConditionCertificatesValid))
	}
	checkKeysTLS(t, e, name, cfg, plainKeys)
	flowing(t, secure, 2*loadRate)
	t.Logf("TLS load: %s", verifyLoad(t, secure))
}
