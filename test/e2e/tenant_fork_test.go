package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// forkRepository is a tenant's etcd image repository (spec.repository is any image): the
// bench's etcd with ETCD_FORCE_NEW_CLUSTER=true in its configuration, so a member started
// from it on its data makes itself a one-member cluster, keeping its ID, its data and the
// cluster ID.
const forkRepository = "tenant/etcd-forced"

// pushForkImage builds that image from the cached etcd of version and serves it.
func pushForkImage(t *testing.T, e *framework.Env, version string) {
	t.Helper()
	spec := ociimage.EtcdSpec(filepath.Join(testenv.CacheDir(), "etcd-v"+version))
	spec.Env = append(spec.Env, "ETCD_FORCE_NEW_CLUSTER=true")
	spec.OS, spec.Architecture = "linux", runtime.GOARCH
	img, err := ociimage.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Bench.PushImage(forkRepository+":v"+version, img); err != nil {
		t.Fatal(err)
	}
}

// TestTenantForkedImage: a tenant rolls an image that forces a new cluster onto a
// 3-member cluster on claims under writes (spec.repository, a rolling reconfiguration).
// The first member restarted on it forks off; the operator sees its member list disagree,
// halts the rollout with the Forked condition naming it, and deletes nothing: every claim
// keeps its UID, the two members not yet restarted keep their pods, and every
// acknowledged write is on some member (the fork's own on the fork).
func TestTenantForkedImage(t *testing.T) {
	e := framework.Setup(t)
	const name = "forked"
	c := newCluster(name, 3)
	pushForkImage(t, e, c.Spec.Version)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: claimSpec()}
	e.Create(c)
	e.WaitAvailable(name, 3, 120*time.Second)
	claims := claimUIDs(t, e, name)
	if len(claims) != 3 {
		t.Fatalf("claims %v, want 3", claims)
	}
	podUIDs := map[string]types.UID{}
	for n, p := range e.MemberPods(name) {
		podUIDs[n] = p.UID
	}
	load := e.StartLoad(name, loadRate)
	flowing(t, load, 2*loadRate)

	e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Repository = forkRepository })
	var forked *etcdv1beta2.ClusterCondition
	e.Eventually(300*time.Second, "the Forked condition", func() error {
		cl := e.Cluster(name)
		for i := range cl.Status.Conditions {
			if cond := cl.Status.Conditions[i]; cond.Type == etcdv1beta2.ClusterConditionForked && cond.Status == corev1.ConditionTrue {
				forked = &cond
				return nil
			}
		}
		return fmt.Errorf("no Forked=True yet (reason %q)", cl.Status.Reason)
	})
	flowing(t, load, loadRate) // writes go on (to both sides)
	load.Stop()

	// The rollout halted at the fork: one pod on the tenant's image, the others untouched.
	onFork := ""
	for n, p := range e.MemberPods(name) {
		if p.DeletionTimestamp != nil {
			t.Errorf("pod %s is being deleted", n)
		}
		if strings.HasPrefix(etcdImage(p), forkRepository+":") {
			if onFork != "" {
				t.Errorf("pods %s and %s both run the forking image: the rollout went on past the fork", onFork, n)
			}
			onFork = n
			continue
		}
		if p.UID != podUIDs[n] {
			t.Errorf("pod %s was recreated although it never got the forking image", n)
		}
	}
	if onFork == "" {
		t.Fatal("no pod runs the forking image; the fork came from elsewhere")
	}
	if !strings.Contains(forked.Message, onFork) {
		t.Errorf("Forked names %q, want the member on the forking image, %s", forked.Message, onFork)
	}
	if got := claimUIDs(t, e, name); fmt.Sprint(got) != fmt.Sprint(claims) {
		t.Errorf("claims %v became %v", claims, got)
	}
	if framework.HasAny(e.EventReasons(name), etcdv1beta2.EventReasonMemberReplaced, etcdv1beta2.EventReasonMemberRemoved) {
		t.Errorf("the operator removed or replaced a member: %v", e.EventReasons(name))
	}
	// Every acknowledged write is held by some member: read from each member alone, or,
	// for a member whose etcd no longer runs (the fork answers its old peers' raft
	// messages with "removed", and they stop themselves), from the database on its claim.
	held := map[string]string{}
	for n, p := range e.MemberPods(name) {
		kvs, err := readOwn("http://"+p.Status.PodIP+":2379", "load/")
		if err != nil {
			t.Logf("member %s does not answer (%v); reading the database on its claim", n, err)
			kvs = readClaimDB(t, e, n, "load/")
		}
		for k, v := range kvs {
			held[k] = v
		}
	}
	acked := load.AckedKeys()
	var lost []string
	for k, v := range acked {
		if held[k] != v {
			lost = append(lost, k)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged writes are on no member, e.g. %v", len(lost), len(acked), lost[:min(5, len(lost))])
	}
	t.Logf("forked member %s; %d acknowledged writes, all held; Forked: %s", onFork, len(acked), forked.Message)
}

// claimUIDs are the cluster's member claims by name.
func claimUIDs(t *testing.T, e *framework.Env, name string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for n, p := range liveClaims(t, e, name) {
		out[n] = p.UID
	}
	return out
}

// liveClaims are the member claims of cluster name that are not being deleted, by name.
func liveClaims(t *testing.T, e *framework.Env, name string) map[string]corev1.PersistentVolumeClaim {
	t.Helper()
	var pvcs corev1.PersistentVolumeClaimList
	if err := e.C.List(context.Background(), &pvcs, client.InNamespace("default"),
		client.MatchingLabelsSelector{Selector: render.ClusterSelector(name)}); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, p := range pvcs.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

func etcdImage(p corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == render.ContainerName {
			return c.Image
		}
	}
	return ""
}

// readOwn reads every key under prefix from the member at endpoint alone (a serializable
// range: what that member holds, whichever cluster it is in).
func readOwn(endpoint, prefix string) (map[string]string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	out := map[string]string{}
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(5000), clientv3.WithSerializable())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", endpoint, err)
		}
		for _, kv := range resp.Kvs {
			out[string(kv.Key)] = string(kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// readClaimDB reads the latest value of every key under prefix from the etcd database on
// member's claim (the bench's provisioner keeps each volume under <bench>/pv/<pv>), read
// only, as etcd's backend stores it: bucket "key", revision → mvccpb.KeyValue, in
// revision order; tombstones (a revision key ending in 't') delete.
func readClaimDB(t *testing.T, e *framework.Env, member, prefix string) map[string]string {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: member}, &pvc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.Bench.Dir(), "pv", pvc.Spec.VolumeName, "data", "member", "snap", "db")
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("open %s's database %s: %v", member, path, err)
	}
	defer db.Close()
	out := map[string]string{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return fmt.Errorf("no key bucket")
		}
		return b.ForEach(func(rev, v []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return err
			}
			if !strings.HasPrefix(string(kv.Key), prefix) {
				return nil
			}
			if len(rev) > 17 && rev[17] == 't' {
				delete(out, string(kv.Key))
				return nil
			}
			out[string(kv.Key)] = string(kv.Value)
			return nil
		})
	})
	if err != nil {
		t.Fatalf("read %s's database: %v", member, err)
	}
	return out
}
