package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// authClient is a client of the cluster's member pods (but skip) with the given
// credentials ("" none).
func authClient(t *testing.T, e *framework.Env, name, user, password string, skip ...string) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, p := range e.MemberPods(name) {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil && !slices.Contains(skip, p.Name) {
			eps = append(eps, fmt.Sprintf("http://%s:%d", p.Status.PodIP, etcdv1beta2.EtcdClientPort))
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Username: user, Password: password, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client of %s: %v", name, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// refused reports whether err is etcd refusing a request for want of credentials.
func refused(err error) bool {
	err = rpctypes.Error(err)
	return errors.Is(err, rpctypes.ErrUserEmpty) || errors.Is(err, rpctypes.ErrPermissionDenied)
}

func waitAuthEnabled(t *testing.T, e *framework.Env, name string, timeout time.Duration) {
	t.Helper()
	e.Eventually(timeout, name+" AuthEnabled=True", func() error {
		c := e.Cluster(name)
		if !framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAuthEnabled) {
			return fmt.Errorf("conditions %v", c.Status.Conditions)
		}
		return nil
	})
}

// TestEtcdAuth: a cluster created with etcd auth comes up with it on (the operator
// creates the root Secret, the root user and role); a client without credentials is
// refused and one with root's works; the operator's own calls carry the credentials
// (a scale-up adds and promotes a member, a backup takes its snapshot), and a replace
// from that backup brings it back with auth and the same root Secret; with built-in TLS
// too, the operator still changes members after auth is on. Then auth is
// turned on on a running plaintext cluster: refused while a member is down (condition
// MembersUnhealthy), then, the member back, on under writes that carry credentials from
// the start: not one write fails.
func TestEtcdAuth(t *testing.T) {
	b := startBackupStore(t, framework.Setup(t))
	ctx := context.Background()

	t.Run("created with auth", func(t *testing.T) {
		const name = "au"
		c := newCluster(name, 1)
		c.Annotations = map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
		b.Create(c)
		waitAuthEnabled(t, b.Env, name, 120*time.Second)

		var s corev1.Secret
		if err := b.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + etcdv1beta2.AuthRootSecretSuffix}, &s); err != nil {
			t.Fatalf("root Secret: %v", err)
		}
		pw := string(s.Data[etcdv1beta2.AuthPasswordKey])
		if len(pw) < 24 || !metav1.IsControlledBy(&s, b.Cluster(name)) {
			t.Fatalf("root Secret: %d-byte password, owners %v", len(pw), s.OwnerReferences)
		}
		b.WaitAvailableAuth(name, 1, 60*time.Second, etcdadmin.RootUser, pw)
		if _, err := authClient(t, b.Env, name, "", "").MemberList(ctx); !refused(err) {
			t.Fatalf("member list without credentials: %v; want it refused", err)
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := authClient(t, b.Env, name, "", "").Put(cctx, "/anon", "x"); !refused(err) {
			t.Fatalf("put without credentials: %v; want permission denied", err)
		}
		if _, err := authClient(t, b.Env, name, etcdadmin.RootUser, pw).Put(cctx, "/root", "x"); err != nil {
			t.Fatalf("put as root: %v", err)
		}
		// No event or condition carries the password.
		for _, cond := range b.Cluster(name).Status.Conditions {
			if strings.Contains(cond.Message, pw) {
				t.Fatalf("condition %s holds the password", cond.Type)
			}
		}
		var evs corev1.EventList
		if err := b.C.List(ctx, &evs, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			if strings.Contains(ev.Message, pw) {
				t.Fatalf("event %s holds the password", ev.Reason)
			}
		}

		// The operator's membership calls use the root user: a scale-up by one.
		b.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 })
		b.WaitAvailableAuth(name, 2, 180*time.Second, etcdadmin.RootUser, pw)
		// And its backups.
		b.Create(b.newBackup("au-once", name, "au/once.db", "aws", nil))
		eb := b.waitCondition(t, "au-once", metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 90*time.Second)
		if eb.Status.EtcdRevision == 0 {
			t.Errorf("backup status %+v", eb.Status)
		}
		if !framework.ConditionTrue(b.Cluster(name), etcdv1beta2.ClusterConditionAuthEnabled) {
			t.Errorf("AuthEnabled not True after the scale-up: %v", b.Cluster(name).Status.Conditions)
		}
		// Nor does the operator's log.
		logText, err := os.ReadFile(b.OperatorLogPath())
		if err != nil || len(logText) == 0 || strings.Contains(string(logText), pw) {
			t.Errorf("operator log: %d bytes (%v); holds the password: %v", len(logText), err, strings.Contains(string(logText), pw))
		}

		// Replaced from that backup (the rollback path): the data holds etcd's auth with
		// root's password from the root Secret, which the new cluster keeps, with auth.
		old := b.Cluster(name)
		b.Create(&etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "au-back", Annotations: map[string]string{
				etcdrestore.ReplaceExistingClusterAnnotation: "true",
				etcdrestore.RestoreClusterSpecAnnotation:     `{"size":1}`,
			}},
			Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: name}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
				RestoreSource: etcdv1beta2.RestoreSource{S3: b.newBackup("", name, "au/once.db", "aws", nil).Spec.S3}},
		})
		waitRestore(t, b.Env, "au-back", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
		waitAuthEnabled(t, b.Env, name, 60*time.Second)
		restored := b.WaitAvailableAuth(name, 1, 60*time.Second, etcdadmin.RootUser, pw)
		if restored.UID == old.UID {
			t.Fatalf("cluster %s was not replaced", name)
		}
		t.Logf("replaced from its backup: uid %s -> %s, auth on", old.UID, restored.UID)
		if err := b.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + etcdv1beta2.AuthRootSecretSuffix}, &s); err != nil ||
			string(s.Data[etcdv1beta2.AuthPasswordKey]) != pw || !metav1.IsControlledBy(&s, restored) || len(s.OwnerReferences) != 1 {
			t.Fatalf("root Secret after the replacement: %v, owners %v, password kept %v", err, s.OwnerReferences, string(s.Data[etcdv1beta2.AuthPasswordKey]) == pw)
		}
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		if r, err := authClient(t, b.Env, name, etcdadmin.RootUser, pw).Get(rctx, "/root"); err != nil || len(r.Kvs) != 1 {
			t.Errorf("the backup's key as root after the replacement: %v", err)
		}
		if _, err := authClient(t, b.Env, name, "", "").Put(rctx, "/anon", "x"); !refused(err) {
			t.Errorf("put without credentials after the replacement: %v; want permission denied", err)
		}
	})

	t.Run("with built-in TLS, the operator's member changes after auth is on", func(t *testing.T) {
		// Over client TLS a member takes a tokenless request's certificate name as its
		// user: the operator's client, made before auth was on, is made again to carry
		// root's token, or adding a member (root's permission) fails.
		const name = "aut"
		c := newCluster(name, 1)
		c.Annotations = map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
		c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
		b.Create(c)
		waitAuthEnabled(t, b.Env, name, 120*time.Second)
		b.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 })
		b.Eventually(180*time.Second, name+" Available with 2 members, auth on", func() error {
			c := b.Cluster(name)
			if !framework.AvailableWith(c, 2) || framework.ConditionTrue(c, etcdv1beta2.ClusterConditionScaling) ||
				!framework.ConditionTrue(c, etcdv1beta2.ClusterConditionAuthEnabled) {
				return fmt.Errorf("status: ready=%v unready=%v conditions=%v", c.Status.Members.Ready, c.Status.Members.Unready, c.Status.Conditions)
			}
			return nil
		})
	})

	t.Run("enabled on a running cluster under writes", func(t *testing.T) {
		const name, pw = "pl", "a-root-password-from-the-user"
		// A Secret the user names says it is for this cluster (the label), or it is not used.
		b.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pl-root", Namespace: "default",
			Labels: map[string]string{etcdv1beta2.AuthRootSecretForLabel: name}},
			Data: map[string][]byte{etcdv1beta2.AuthPasswordKey: []byte(pw)}})
		b.Create(newCluster(name, 3))
		b.WaitAvailable(name, 3, 120*time.Second)

		// A member is down (frozen): turning auth on is refused, with a condition saying why.
		var frozen atomic.Value
		for p := range b.MemberPods(name) {
			frozen.Store(p)
			break
		}
		if err := b.Bench.Faults().StopPod("default", frozen.Load().(string)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Bench.Faults().ContinuePod("default", frozen.Load().(string)) })
		b.Update(name, func(c *etcdv1beta2.EtcdCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[etcdv1beta2.AuthAnnotation] = etcdv1beta2.AuthEnabledValue
			c.Annotations[etcdv1beta2.AuthRootSecretAnnotation] = "pl-root"
		})
		b.Eventually(60*time.Second, "AuthEnabled=False MembersUnhealthy while a member is down", func() error {
			for _, cond := range b.Cluster(name).Status.Conditions {
				if cond.Type == etcdv1beta2.ClusterConditionAuthEnabled && cond.Status == corev1.ConditionFalse && cond.Reason == etcdv1beta2.ReasonAuthMembersUnhealthy {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", b.Cluster(name).Status.Conditions)
		})

		// Writers carry the credentials from the start (etcd ignores them while auth is
		// off); they leave the frozen member out until it is back.
		load, err := framework.StartLoad(framework.LoadOptions{Rate: 20, Prefix: "auth-load/", Username: etcdadmin.RootUser, Password: pw,
			Endpoints: func() []string {
				var eps []string
				pods, err := b.ListMemberPods(name)
				if err != nil {
					return nil
				}
				for _, p := range pods {
					if p.Status.PodIP != "" && p.DeletionTimestamp == nil && p.Name != frozen.Load().(string) {
						eps = append(eps, fmt.Sprintf("http://%s:%d", p.Status.PodIP, etcdv1beta2.EtcdClientPort))
					}
				}
				return eps
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { load.Stop() })
		if err := load.WaitAcked(50, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := authClient(t, b.Env, name, "", "", frozen.Load().(string)).Put(cctx, "/anon-before", "x"); err != nil {
			t.Fatalf("put without credentials while turning auth on was refused: %v", err)
		}
		if err := b.Bench.Faults().ContinuePod("default", frozen.Load().(string)); err != nil {
			t.Fatal(err)
		}
		frozen.Store("")
		waitAuthEnabled(t, b.Env, name, 90*time.Second)
		if err := load.WaitAcked(100, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := authClient(t, b.Env, name, "", "").Put(cctx, "/anon", "x"); !refused(err) {
			t.Fatalf("put without credentials after auth on: %v; want permission denied", err)
		}
		vctx, vcancel := context.WithTimeout(ctx, 60*time.Second)
		defer vcancel()
		res, err := load.Verify(vctx)
		t.Logf("load: %v", res)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed != 0 || res.Acked < 150 {
			t.Fatalf("writes across auth enable: %v; want 0 failed", res)
		}
	})
}
