package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestTotalLossRestoreFromBackup: a 3-member emptyDir cluster with keys is backed up to
// MinIO, more keys are written, then every member pod is deleted (all data gone). Without
// the opt-in the cluster stays Failed, saying which backup could be restored and how to
// opt in, and nothing is created. With it, the cluster comes back Available under the
// same name and client Service with every key the backup held, and none written after.
func TestTotalLossRestoreFromBackup(t *testing.T) {
	b := startBackupStore(t, framework.Setup(t))
	const name, keys = "lazarus", 200
	c := newCluster(name, 3)
	c.Annotations = map[string]string{etcdcluster.AnnotationQuorumLossGrace: "15s"}
	b.Create(c)
	b.WaitAvailable(name, 3, 120*time.Second)
	uid := b.Cluster(name).UID
	writeKeys(b.Env, b.EtcdClient(name), keys, "/kept", "v")

	eb := b.newBackup("lazarus-backup", name, "lazarus/snap.db", "aws", nil)
	eb.Spec.EtcdEndpoints, eb.Spec.ClusterRef = nil, &etcdv1beta2.EtcdClusterRef{Name: name}
	b.Create(eb)
	b.waitCondition(t, eb.Name, metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 60*time.Second)
	writeKeys(b.Env, b.EtcdClient(name), 20, "/lost", "v") // after the backup: gone with the members

	ctx := context.Background()
	for n, p := range b.MemberPods(name) {
		if err := b.C.Delete(ctx, &p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatalf("delete pod %s: %v", n, err)
		}
	}
	t.Log("deleted every member pod")

	// Without the opt-in: Failed, the backup and the annotation named, nothing created.
	b.Eventually(60*time.Second, "total loss reported with the backup", func() error {
		c := b.Cluster(name)
		msg := recoveringMessage(c)
		if c.Status.Phase != etcdv1beta2.ClusterPhaseFailed || c.Status.Reason != etcdv1beta2.ReasonAllMembersLost ||
			!strings.Contains(msg, etcdv1beta2.AnnotationAllowRestoreFromBackup) || !strings.Contains(msg, backupBucket+"/lazarus/snap.db") {
			return fmt.Errorf("phase %s reason %s: %s", c.Status.Phase, c.Status.Reason, msg)
		}
		return nil
	})
	// Past the grace (15s) the operator still creates nothing: a bounded observation
	// of a negative, not a synchronisation.
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		if pods := b.MemberPods(name); len(pods) != 0 {
			t.Fatalf("pods created without the opt-in: %d", len(pods))
		}
	}

	b.Update(name, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations[etcdv1beta2.AnnotationAllowRestoreFromBackup] = "true"
	})
	restored := b.WaitAvailable(name, 3, 5*time.Minute)
	if restored.UID != uid || restored.Status.ServiceName != name+"-client" {
		t.Errorf("restored cluster uid %s service %q, want the same object (%s) and Service", restored.UID, restored.Status.ServiceName, uid)
	}
	rec := restored.Status.BackupRestore
	if rec == nil || rec.FinishedAt == nil || rec.Backup != eb.Name || rec.Path != backupBucket+"/lazarus/snap.db" || rec.Revision == 0 {
		t.Errorf("status.backupRestore %+v", rec)
	}
	if !framework.ConditionTrue(restored, etcdcluster.ClusterConditionRestoredFromBackup) {
		t.Errorf("no RestoredFromBackup condition: %+v", restored.Status.Conditions)
	}

	cli := b.EtcdClient(name)
	b.Eventually(30*time.Second, "every key the backup held", func() error {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		kept, err := cli.Get(rctx, "/kept/", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		lost, err := cli.Get(rctx, "/lost/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		if len(kept.Kvs) != keys || lost.Count != 0 {
			return fmt.Errorf("%d kept keys (want %d), %d written after the backup (want 0)", len(kept.Kvs), keys, lost.Count)
		}
		for _, kv := range kept.Kvs {
			var i int
			if _, err := fmt.Sscanf(string(kv.Key), "/kept/%04d", &i); err != nil || string(kv.Value) != fmt.Sprintf("v%d", i) {
				return fmt.Errorf("key %s = %q", kv.Key, kv.Value)
			}
		}
		return nil
	})
	reasons := strings.Join(b.EventReasons(name), " ")
	for _, want := range []string{etcdv1beta2.ReasonRestoringFromBackup, etcdv1beta2.ReasonRestoredFromBackup} {
		if !strings.Contains(reasons, want) {
			t.Errorf("no %s event; events: %s", want, reasons)
		}
	}
}

// recoveringMessage is the Recovering condition's message.
func recoveringMessage(c *etcdv1beta2.EtcdCluster) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionRecovering && cond.Status == corev1.ConditionTrue {
			return cond.Message
		}
	}
	return ""
}
