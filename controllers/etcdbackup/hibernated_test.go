package etcdbackup

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A due backup of a hibernated cluster (spec.size 0) is skipped, not failed: no pod, no
// back-off, a Skipped condition naming the cluster, one normal event; once the cluster is
// back the run is taken and the condition goes.
func TestBackupSkipsHibernatedCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		eb   func() *etcdv1beta2.EtcdBackup
	}{
		{"by clusterRef", func() *etcdv1beta2.EtcdBackup { return pvcBackup("ns", 60) }},
		{"by the client Service's name", func() *etcdv1beta2.EtcdBackup {
			eb := pvcBackup("ns", 60)
			eb.Spec.ClusterRef, eb.Spec.EtcdEndpoints = nil, []string{"http://main-client.ns.svc:2379"}
			return eb
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := mainCluster("ns")
			cluster := objs[0].(*etcdv1beta2.EtcdCluster)
			cluster.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{}}
			h := newHarness(t, tc.eb(), cluster) // hibernated: size 0, no member pod

			if res := h.reconcile(); res.RequeueAfter != hibernatedRecheck {
				t.Errorf("requeue %v, want %v", res.RequeueAfter, hibernatedRecheck)
			}
			if p := h.pod(); p != nil {
				t.Fatalf("backup pod %s created for a hibernated cluster", p.Name)
			}
			eb := h.backup()
			skipped := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSkipped)
			if skipped == nil || skipped.Status != metav1.ConditionTrue || skipped.Reason != etcdv1beta2.ReasonClusterHibernated ||
				!strings.Contains(skipped.Message, "EtcdCluster main is hibernated") {
				t.Errorf("Skipped condition %+v", skipped)
			}
			if c := h.condition(); c != nil || eb.Status.Reason != "" || h.failures() != 0 {
				t.Errorf("a skip reads as a failure: Succeeded %+v, reason %q, failures %d", c, eb.Status.Reason, h.failures())
			}
			if ev := h.drainEvents(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal BackupSkipped ") {
				t.Errorf("events %v, want one normal BackupSkipped", ev)
			}
			h.clock.Advance(hibernatedRecheck)
			h.reconcile()
			if ev := h.drainEvents(); len(ev) != 0 {
				t.Errorf("the same skip again recorded %v", ev)
			}

			// Back to size 3 with a running member: the due run is taken.
			cluster.Spec.Size = 3
			if err := h.c.Update(h.ctx, cluster); err != nil {
				t.Fatal(err)
			}
			if err := h.c.Create(h.ctx, objs[1].(client.Object)); err != nil {
				t.Fatal(err)
			}
			h.reconcile()
			h.mustPod()
			h.succeedPod(storedResult())
			h.reconcile()
			eb = h.backup()
			if meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSkipped) != nil {
				t.Errorf("Skipped condition kept after a stored backup: %+v", eb.Status.Conditions)
			}
			if c := h.condition(); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("Succeeded %+v after the cluster came back", c)
			}
		})
	}
}
