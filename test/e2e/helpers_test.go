package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// setupWithOperatorImage is framework.Setup: every bench serves the operator's image
// (built from this checkout), which restore init containers and backup pods run.
func setupWithOperatorImage(t *testing.T) *framework.Env {
	t.Helper()
	return framework.Setup(t)
}

// claimSpec is the members' claim of the e2e clusters that keep their data on claims:
// 1 GiB ReadWriteOnce (the bench provisions it).
func claimSpec() *corev1.PersistentVolumeClaimSpec {
	return &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

// startClaimedCluster creates a 3-member cluster keeping its data on claims, waits until
// it is Available and returns its members.
func startClaimedCluster(t *testing.T, e *framework.Env, name string) []*framework.EtcdMember {
	t.Helper()
	createOnClaims(e, name, 3, 120*time.Second)
	ms, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// startAvailable creates a cluster of size members, waits until it is Available and
// returns a client of it.
func startAvailable(e *framework.Env, name string, size int) *clientv3.Client {
	e.Create(newCluster(name, size))
	e.WaitAvailable(name, size, 120*time.Second)
	return e.EtcdClient(name)
}

// noSharedMemberIDs fails the test unless the restored cluster's members all have IDs
// other than the source's (the restore is a new cluster, not a copy of its members).
func noSharedMemberIDs(t *testing.T, e *framework.Env, source, restored string) {
	t.Helper()
	srcMembers, err1 := e.Members(source)
	newMembers, err2 := e.Members(restored)
	if err1 != nil || err2 != nil {
		t.Fatalf("member lists: %v, %v", err1, err2)
	}
	for id := range framework.MemberIDs(newMembers) {
		if _, shared := framework.MemberIDs(srcMembers)[id]; shared {
			t.Errorf("restored cluster shares member ID %x with the source", id)
		}
	}
}

// rollWatch samples a rolling recreation of a cluster's member pods: the order they were
// recreated in and the most of them away from service (missing, being deleted or not
// Ready) at once.
type rollWatch struct {
	oldUID map[string]types.UID
	order  []string
	worst  int
}

// watchRoll notes the member pods of cluster name before a rollout.
func watchRoll(e *framework.Env, name string) *rollWatch {
	w := &rollWatch{oldUID: map[string]types.UID{}}
	for n, p := range e.MemberPods(name) {
		w.oldUID[n] = p.UID
	}
	return w
}

// sample notes the member pods now; it is nil once every pod noted before was recreated.
func (w *rollWatch) sample(pods map[string]corev1.Pod) error {
	away := 0
	for n := range w.oldUID {
		p, ok := pods[n]
		if !ok || p.DeletionTimestamp != nil || !podIsReady(p) {
			away++
		}
		if ok && p.UID != w.oldUID[n] && !slices.Contains(w.order, n) {
			w.order = append(w.order, n)
		}
	}
	w.worst = max(w.worst, away)
	for n := range w.oldUID {
		if p, ok := pods[n]; !ok || p.UID == w.oldUID[n] {
			return fmt.Errorf("pod %s not recreated yet (recreated so far: %v)", n, w.order)
		}
	}
	return nil
}

// doneOnSameMembers waits until the cluster is Available with its spec applied and
// checks that the rollout kept the members before (each recreated on its claim) and
// took one pod at a time.
func (w *rollWatch) doneOnSameMembers(t *testing.T, e *framework.Env, name string, before []*framework.EtcdMember) {
	t.Helper()
	e.WaitAvailable(name, len(w.oldUID), 120*time.Second)
	waitSpecApplied(e, name)
	after, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(framework.MemberIDs(after)) != fmt.Sprint(framework.MemberIDs(before)) {
		t.Errorf("members changed: %v -> %v (want every member recreated on its claim)", framework.MemberIDs(before), framework.MemberIDs(after))
	}
	if w.worst > 1 {
		t.Errorf("%d member pods were away at once; a rollout takes one at a time", w.worst)
	}
}

// backupStore starts MinIO on the bench's bridge (pods reach it) with the bucket
// backupBucket, and creates the Secret "aws" holding its credentials and config files.
func backupStore(t *testing.T, e *framework.Env) *miniotest.Server {
	t.Helper()
	srv := miniotest.StartOn(t, bench.ControlPlaneIP)
	srv.MakeBucket(t, backupBucket)
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})
	return srv
}

// createOnClaims creates a cluster of size members keeping their data on claims and
// waits until it is Available.
func createOnClaims(e *framework.Env, name string, size int, timeout time.Duration) {
	c := newCluster(name, size)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: claimSpec()}
	e.Create(c)
	e.WaitAvailable(name, size, timeout)
}

// staticTLSSecrets makes a PKI for cluster name and creates its peer, server and
// operator Secrets, name-peer, name-server and name-operator.
func staticTLSSecrets(t *testing.T, e *framework.Env, name string) *framework.ClusterTLS {
	pki := framework.NewClusterTLS(t, name, "default")
	e.Create(pki.PeerSecret(name + "-peer"))
	e.Create(pki.ServerSecret(name + "-server"))
	e.Create(pki.OperatorSecret(name + "-operator"))
	return pki
}

// createClaim creates a 1 GiB ReadWriteOnce claim (the bench provisions it).
func createClaim(e *framework.Env, name string) {
	e.Create(&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       *claimSpec(),
	})
}

// writeKeys puts n keys "<prefix>/%04d" = "<valuePrefix>%d", retrying the whole batch
// until it succeeds (puts are idempotent).
func writeKeys(e *framework.Env, cli *clientv3.Client, n int, prefix, valuePrefix string) {
	e.Eventually(30*time.Second, "keys written", func() error {
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := cli.Put(ctx, fmt.Sprintf("%s/%04d", prefix, i), fmt.Sprintf("%s%d", valuePrefix, i))
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func clientKey(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }

// deploymentAvailable is a condition for framework.Eventually or Poll: nil once the
// Deployment has an available replica.
func deploymentAvailable(ctx context.Context, c client.Client, d *appsv1.Deployment) func() error {
	return func() error {
		var got appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
			return err
		}
		if got.Status.AvailableReplicas < 1 {
			return fmt.Errorf("available replicas %d", got.Status.AvailableReplicas)
		}
		return nil
	}
}

type errPhase corev1.PodPhase

func (p errPhase) Error() string { return "pod phase " + string(p) }
