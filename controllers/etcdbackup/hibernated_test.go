package etcdbackup

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// backupsOfMain are the two ways an EtcdBackup names mainCluster's cluster.
var backupsOfMain = []struct {
	name string
	eb   func() *etcdv1beta2.EtcdBackup
}{
	{"by clusterRef", func() *etcdv1beta2.EtcdBackup { return pvcBackup("ns", 60) }},
	{"by the client Service's name", func() *etcdv1beta2.EtcdBackup {
		eb := pvcBackup("ns", 60)
		eb.Spec.ClusterRef, eb.Spec.EtcdEndpoints = nil, []string{"http://main-client.ns.svc:2379"}
		return eb
	}},
}

// mainClusterWithClaims is mainCluster("ns") with member claims, as a cluster must have to
// hibernate; cluster is objs[0].
func mainClusterWithClaims() (objs []client.Object, cluster *etcdv1beta2.EtcdCluster) {
	objs = mainCluster("ns")
	cluster = objs[0].(*etcdv1beta2.EtcdCluster)
	cluster.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{}}
	return objs, cluster
}

// A due backup of a hibernated cluster (spec.size 0) is skipped, not failed: no pod, no
// back-off, a Skipped condition naming the cluster, one normal event; once the cluster is
// back the run is taken and the condition goes.
func TestBackupSkipsHibernatedCluster(t *testing.T) {
	for _, tc := range backupsOfMain {
		t.Run(tc.name, func(t *testing.T) {
			objs, cluster := mainClusterWithClaims()
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
			// A skip is no attempt: the backup alerts (EtcdBackupFailing, EtcdBackupTooOld)
			// read etcd_operator_backups_total as attempts and must stay quiet.
			if got := testutil.ToFloat64(backupsTotal.WithLabelValues(eb.Namespace, eb.Name, etcdv1beta2.ReasonClusterHibernated)); got != 0 {
				t.Errorf("a skip counted in etcd_operator_backups_total: %v", got)
			}
			if got := testutil.ToFloat64(backupSkipped.WithLabelValues(eb.Namespace, eb.Name)); got != 1 {
				t.Errorf("etcd_operator_backup_skipped = %v while skipped, want 1", got)
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
			if got := testutil.ToFloat64(backupSkipped.WithLabelValues(eb.Namespace, eb.Name)); got != 0 {
				t.Errorf("etcd_operator_backup_skipped = %v after the cluster came back, want 0", got)
			}
		})
	}
}

// A cluster at spec.size 0 whose member pods still run (hibernation refused because they
// have no claims, or the cluster paused or mid-restore) is not hibernated: its due backup
// is taken, not skipped as if its members were stopped.
func TestBackupOfSizeZeroClusterWithRunningPodsIsTaken(t *testing.T) {
	for _, tc := range backupsOfMain {
		t.Run(tc.name, func(t *testing.T) {
			objs, cluster := mainClusterWithClaims()
			cluster.Status.Conditions = []etcdv1beta2.ClusterCondition{{Type: "Available", Status: "False", Reason: etcdv1beta2.ReasonHibernationRefused}}
			h := newHarness(t, tc.eb(), cluster, objs[1]) // size 0, one member pod still running

			h.reconcile()
			h.mustPod()
			if s := meta.FindStatusCondition(h.backup().Status.Conditions, etcdv1beta2.BackupConditionSkipped); s != nil {
				t.Errorf("backup of a cluster whose pods run skipped: %+v", s)
			}
		})
	}
}
