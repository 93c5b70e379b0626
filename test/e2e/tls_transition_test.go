package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestTLSTransition moves a running 3-member plaintext cluster (with claims) to TLS
// under a write load, then rotates it onto new Secrets, then refuses Secrets signed by
// a CA the members do not trust:
//   - plaintext to TLS: a plaintext writer runs until every member serves TLS clients
//     too (step 2), then a TLS writer takes over to the end; no acknowledged write of
//     either fails or is lost, every member keeps its ID (restarted on its claim), at
//     most one member pod is away at once, and every peer URL is https at the end; the
//     operator is stopped right after its first peer URL update and started again,
//     and carries on from what it observes;
//   - rotation onto renewed certificates of the same CA, operator Secret included:
//     every pod mounts the new Secrets, members keep their IDs, the TLS writer goes on;
//   - a peer Secret from another CA: SpecApplied says TLSChangeRefused naming it, and
//     no pod is restarted; a member pod deleted meanwhile comes back on its claim on the
//     Secrets the members run on (not the refused one), Ready, the same members serving
//     a TLS writer with no failed write, and the refusal still reported.
func TestTLSTransition(t *testing.T) {
	e := framework.Setup(t)
	const name = "tlsmove"
	pki := staticTLSSecrets(t, e, name)
	before := startClaimedCluster(t, e, name)
	cfg := pki.ClientConfig(t)

	// The operator is stopped right after its first peer URL update, the one moment a
	// member is cut off from its peers (its URL says https, its pod listens on http),
	// and started again: it must carry on from what it observes. The hook is installed
	// while no reconciler runs, so no reconcile races with it.
	stopped := make(chan string, 1)
	var once sync.Once
	e.StopOperatorNow()
	e.AfterAction = func(ctx context.Context, cluster string, a planner.Action) {
		if cluster != "default/"+name || a.Kind != planner.UpdatePeerURL {
			return
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return
		}
		stopped <- a.String()
		<-ctx.Done() // "killed": nothing after the step runs until the operator stops
	}
	t.Cleanup(func() {
		e.StopOperatorNow()
		e.AfterAction = nil
	})
	e.StartOperator()
	restartedAfter := ""

	plain := e.StartLoad(name, loadRate)
	flowing(t, plain, 2*loadRate)
	start := time.Now()
	e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.TLS = framework.StaticTLS(name+"-peer", name+"-server", name+"-operator")
	})

	// Sampled while moving: the most member pods away from service at once, and the
	// steps SpecApplied named.
	worst := 0
	steps := map[string]bool{}
	sample := func() {
		select {
		case s := <-stopped:
			restartedAfter = s
			t.Logf("operator stopped after %s; starting it again", s)
			e.StopOperatorNow()
			e.StartOperator()
		default:
		}
		cl := e.Cluster(name)
		msg := conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied)
		for _, s := range []string{"step 1 of 3", "step 2 of 3", "step 3 of 3"} {
			if strings.Contains(msg, s) {
				steps[s] = true
			}
		}
		away := 0
		pods := e.MemberPods(name)
		for _, m := range before {
			if p, ok := pods[m.Name]; !ok || p.DeletionTimestamp != nil || !podIsReady(p) {
				away++
			}
		}
		worst = max(worst, away)
	}
	e.Eventually(420*time.Second, "every member serving TLS clients (step 2 under way)", func() error {
		sample()
		if !steps["step 2 of 3"] && !steps["step 3 of 3"] {
			return fmt.Errorf("SpecApplied: %s", conditionReason(e.Cluster(name), etcdv1beta2.ClusterConditionSpecApplied))
		}
		return nil
	})
	// Plaintext clients are served until the last step: the plaintext writer stops here
	// and is checked while plaintext still answers; a TLS writer goes on.
	secure := e.StartLoadTLS(name, loadRate, cfg)
	flowing(t, secure, 2*loadRate)
	plainKeys := plain.AckedKeys()
	plainRes := verifyLoad(t, plain)
	e.Eventually(420*time.Second, "every member on TLS (peer URLs https, plaintext dropped)", func() error {
		sample()
		ms, err := e.MembersTLS(name, cfg)
		if err != nil {
			return err
		}
		if len(ms) != 3 {
			return fmt.Errorf("%d members", len(ms))
		}
		if err := allOnTLS(ms); err != nil {
			return err
		}
		if cl := e.Cluster(name); !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionSpecApplied) {
			return fmt.Errorf("SpecApplied: %s", conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied))
		}
		return nil
	})
	t.Logf("plaintext to TLS in %v; steps seen %v; at most %d member pods away at once; plaintext load %s",
		time.Since(start).Round(time.Second), steps, worst, plainRes)
	after, err := e.MembersTLS(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(memberIDs(after)) != fmt.Sprint(framework.MemberIDs(before)) {
		t.Errorf("members changed: %v -> %v (want every member restarted on its claim)", framework.MemberIDs(before), memberIDs(after))
	}
	if worst > 1 {
		t.Errorf("%d member pods were away at once; the move takes one at a time", worst)
	}
	t.Logf("event reasons: %v", e.EventReasons(name))
	if restartedAfter == "" {
		t.Errorf("the operator never updated a peer URL (no restart after it was tested)")
	}
	if !steps["step 1 of 3"] && !steps["step 2 of 3"] {
		t.Errorf("SpecApplied never named a step of turning TLS on: %v", steps)
	}
	for pod, p := range e.MemberPods(name) {
		for _, a := range p.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--listen-client-urls=") && strings.Contains(a, "http://") {
				t.Errorf("pod %s still serves plaintext clients: %s", pod, a)
			}
		}
	}
	checkKeysTLS(t, e, name, cfg, plainKeys)

	t.Run("rotation onto renewed certificates", func(t *testing.T) {
		uids := podUIDs(e, name)
		pki.Renew(t)
		e.Create(pki.PeerSecret(name + "-peer-2"))
		e.Create(pki.ServerSecret(name + "-server-2"))
		e.Create(pki.OperatorSecret(name + "-operator-2"))
		start := time.Now()
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.TLS = framework.StaticTLS(name+"-peer-2", name+"-server-2", name+"-operator-2")
		})
		sawRotating := false
		e.Eventually(300*time.Second, "every member pod on the new Secrets", func() error {
			if strings.Contains(conditionReason(e.Cluster(name), etcdv1beta2.ClusterConditionSpecApplied), "rotating the TLS Secrets") {
				sawRotating = true
			}
			for n, p := range e.MemberPods(name) {
				if p.UID == uids[n] {
					return fmt.Errorf("pod %s not recreated yet", n)
				}
				for _, v := range p.Spec.Volumes {
					if v.Secret != nil && (v.Name == "member-peer-tls" || v.Name == "member-server-tls") && !strings.HasSuffix(v.Secret.SecretName, "-2") {
						return fmt.Errorf("pod %s mounts %s", n, v.Secret.SecretName)
					}
				}
			}
			if cl := e.Cluster(name); !framework.ConditionTrue(cl, etcdv1beta2.ClusterConditionSpecApplied) {
				return fmt.Errorf("SpecApplied: %s", conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied))
			}
			return nil
		})
		e.WaitAvailableTLS(name, 3, pki.ClientConfig(t), 120*time.Second)
		rotated, err := e.MembersTLS(name, pki.ClientConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(memberIDs(rotated)) != fmt.Sprint(memberIDs(after)) {
			t.Errorf("members changed in the rotation: %v -> %v", memberIDs(after), memberIDs(rotated))
		}
		if !sawRotating {
			t.Errorf("SpecApplied never said the TLS Secrets were rotating")
		}
		flowing(t, secure, 2*loadRate)
		t.Logf("rotated in %v", time.Since(start).Round(time.Second))
	})
	res := verifyLoad(t, secure)
	t.Logf("TLS load through the move and the rotation: %s", res)

	t.Run("a Secret from a CA the members do not trust is refused", func(t *testing.T) {
		uids := podUIDs(e, name)
		foreign := framework.NewClusterTLS(t, name, "default")
		e.Create(foreign.PeerSecret(name + "-foreign-peer"))
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.TLS.Static.Member.PeerSecret = name + "-foreign-peer" })
		e.Eventually(60*time.Second, "SpecApplied TLSChangeRefused naming the Secret", func() error {
			cl := e.Cluster(name)
			msg := conditionReason(cl, etcdv1beta2.ClusterConditionSpecApplied)
			if !strings.HasPrefix(msg, etcdv1beta2.ReasonTLSChangeRefused+":") || !strings.Contains(msg, name+"-foreign-peer") {
				return fmt.Errorf("SpecApplied: %s", msg)
			}
			return nil
		})
		t.Logf("refused: %s", conditionReason(e.Cluster(name), etcdv1beta2.ClusterConditionSpecApplied))
		for n, uid := range podUIDs(e, name) {
			if uids[n] != uid {
				t.Errorf("pod %s was recreated for a refused TLS change", n)
			}
		}
		if len(podUIDs(e, name)) != len(uids) {
			t.Errorf("member pods %v, were %v", podUIDs(e, name), uids)
		}

		t.Run("a member pod deleted meanwhile comes back on the Secrets in use", func(t *testing.T) {
			// The planner's recreate rule recreates the pod on its claim at once; rendered from the spec it would
			// mount the foreign peer Secret, and its peers would refuse it.
			cfg := pki.ClientConfig(t)
			load := e.StartLoadTLS(name, loadRate, cfg)
			flowing(t, load, 2*loadRate)
			before, err := e.MembersTLS(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			victim, _ := nonLeaderTLS(t, e, name, cfg)
			uids := podUIDs(e, name)
			p := e.MemberPods(name)[victim]
			if err := e.C.Delete(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			e.Eventually(180*time.Second, "pod "+victim+" back, Ready, on the Secrets in use", func() error {
				p, ok := e.MemberPods(name)[victim]
				switch {
				case !ok || p.UID == uids[victim]:
					return fmt.Errorf("pod %s not recreated yet", victim)
				case !podIsReady(p):
					return fmt.Errorf("pod %s not Ready", victim)
				}
				return nil
			})
			back := e.MemberPods(name)[victim]
			for _, v := range back.Spec.Volumes {
				if v.Secret == nil {
					continue
				}
				if want := map[string]string{"member-peer-tls": name + "-peer-2", "member-server-tls": name + "-server-2"}[v.Name]; want != "" && v.Secret.SecretName != want {
					t.Errorf("recreated pod %s mounts %s as %s, want %s (the Secret the members run on)", victim, v.Secret.SecretName, v.Name, want)
				}
			}
			e.WaitAvailableTLS(name, 3, cfg, 120*time.Second)
			t.Logf("pod %s back and the cluster available in %v", victim, time.Since(start).Round(time.Second))
			after, err := e.MembersTLS(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(memberIDs(after)) != fmt.Sprint(memberIDs(before)) {
				t.Errorf("members changed: %v -> %v (want the member back on its claim)", memberIDs(before), memberIDs(after))
			}
			for n, uid := range podUIDs(e, name) {
				if n != victim && uids[n] != uid {
					t.Errorf("pod %s was recreated too", n)
				}
			}
			flowing(t, load, 2*loadRate)
			verifyLoad(t, load)
			msg := conditionReason(e.Cluster(name), etcdv1beta2.ClusterConditionSpecApplied)
			if !strings.HasPrefix(msg, etcdv1beta2.ReasonTLSChangeRefused+":") || !strings.Contains(msg, name+"-foreign-peer") {
				t.Errorf("SpecApplied after the pod came back: %s; want the refusal still reported", msg)
			}
		})
	})
}

func podUIDs(e *framework.Env, name string) map[string]types.UID {
	out := map[string]types.UID{}
	for n, p := range e.MemberPods(name) {
		out[n] = p.UID
	}
	return out
}

// checkKeysTLS reads every key of want over TLS and fails the test for any missing or
// different.
func checkKeysTLS(t *testing.T, e *framework.Env, name string, cfg *tls.Config, want map[string]string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.MemberEndpointsTLS(name), TLS: cfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "load/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read the plaintext writer's keys over TLS: %v", err)
	}
	got := map[string]string{}
	for _, kv := range r.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	lost := 0
	for k, v := range want {
		if got[k] != v {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d writes acknowledged in plaintext lost after the move to TLS", lost, len(want))
	}
}

// waitServingTLSClients waits until the plaintext-to-TLS path has every member serving
// TLS clients (its step 2 under way, or step 3).
func waitServingTLSClients(e *framework.Env, name string) {
	e.Eventually(420*time.Second, "every member serving TLS clients (step 2 under way)", func() error {
		msg := conditionReason(e.Cluster(name), etcdv1beta2.ClusterConditionSpecApplied)
		if !strings.Contains(msg, "step 2 of 3") && !strings.Contains(msg, "step 3 of 3") {
			return fmt.Errorf("SpecApplied: %s", msg)
		}
		return nil
	})
}

// peersOnTLS is nil when every member has one peer URL, an https one.
func peersOnTLS(ms []*etcdserverpb.Member) error {
	for _, m := range ms {
		if len(m.PeerURLs) != 1 || !strings.HasPrefix(m.PeerURLs[0], "https://") {
			return fmt.Errorf("member %s peer URLs %v", m.Name, m.PeerURLs)
		}
	}
	return nil
}

// allOnTLS is peersOnTLS, and no member still advertises a plaintext client URL.
func allOnTLS(ms []*etcdserverpb.Member) error {
	if err := peersOnTLS(ms); err != nil {
		return err
	}
	for _, m := range ms {
		for _, u := range m.ClientURLs {
			if !strings.HasPrefix(u, "https://") {
				return fmt.Errorf("member %s still advertises %s", m.Name, u)
			}
		}
	}
	return nil
}
