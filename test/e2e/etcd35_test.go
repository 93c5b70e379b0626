package e2e

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// etcd35 is the 3.5 release the tool cache builds (hack/tools.sh ETCD_VERSIONS), as
// spec.version spells it.
var etcd35 = strings.TrimPrefix(testenv.Etcd35Version, "v")

// TestEtcd35 runs a cluster on etcd 3.5 the way a user still on 3.5 does: create it,
// scale it through a learner, lose a member pod (replaced through a learner), back it up
// and restore the backup into a new 3.5 cluster with every key, then upgrade it one
// minor at a time, 3.5 → 3.6 → 3.7, in place under writes: no failed write, no
// acknowledged write lost, the same members throughout the upgrades.
func TestEtcd35(t *testing.T) {
	const name, restored, keys = "v35", "v35-restored", 100
	ctx := context.Background()
	// The bench serves an etcd image for each version in the tool cache.
	testenv.Etcd(t, testenv.Etcd35Version)
	// The restore step runs the operator's image: this build.
	e := setupWithOperatorImage(t)

	c := newCluster(name, 3)
	c.Spec.Version = etcd35
	// A small snapshot interval, so that the 3.6 step's snapshot past the 3.5 log, which
	// the operator waits for before 3.7, comes within seconds of writes.
	c.Spec.Pod = &etcdv1beta2.PodPolicy{EtcdEnv: []corev1.EnvVar{{Name: "ETCD_SNAPSHOT_COUNT", Value: strconv.Itoa(snapshotCount)}}}
	e.Create(c)
	e.WaitAvailable(name, 3, 120*time.Second)
	requireVersion(t, e, name, 3, etcd35)
	requireMemberDetails(t, e, name, 3, etcd35)
	load := e.StartLoad(name, loadRate)
	flowing(t, load, loadRate)

	t.Run("scale up through a learner", func(t *testing.T) {
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
		e.WaitAvailable(name, 4, 120*time.Second)
		if !framework.HasAny(e.EventReasons(name), "MemberPromoted") {
			t.Errorf("no learner was promoted: events %v", e.EventReasons(name))
		}
		e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
		e.WaitAvailable(name, 3, 120*time.Second)
	})

	t.Run("deleted member pod replaced", func(t *testing.T) {
		// A member of etcd's list whose pod exists: right after the scale-down above, the
		// removed member's pod may still be listed (terminating) though it is no member.
		ms, err := e.Members(name)
		if err != nil {
			t.Fatal(err)
		}
		pods := e.MemberPods(name)
		var gone *framework.EtcdMember
		for _, m := range ms {
			if _, ok := pods[m.Name]; ok {
				gone = m
				break
			}
		}
		if gone == nil {
			t.Fatalf("no member of %v has a pod among %d", framework.MemberIDs(ms), len(pods))
		}
		victim := gone.Name
		if err := e.C.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: victim, Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
		waitReplaced(t, e, name, gone.ID, victim, 3, 3*time.Minute)
		requireVersion(t, e, name, 3, etcd35)
	})

	t.Run("backup and restore into a new 3.5 cluster", func(t *testing.T) {
		srv := backupStore(t, e)
		s3 := &etcdv1beta2.S3BackupSource{Path: backupBucket + "/v35/backup.db", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}
		writeKeys(e, e.EtcdClient(name), keys, "/data", "value-")
		e.Create(&etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "v35"},
			Spec: etcdv1beta2.EtcdBackupSpec{
				EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", name)},
				StorageType:   etcdv1beta2.BackupStorageTypeS3,
				BackupSource:  etcdv1beta2.BackupSource{S3: s3},
			},
		})
		var eb etcdv1beta2.EtcdBackup
		e.Eventually(90*time.Second, "backup succeeded", func() error {
			if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "v35"}, &eb); err != nil {
				return err
			}
			if !eb.Status.Succeeded {
				return fmt.Errorf("backup status %+v", eb.Status)
			}
			return nil
		})
		if eb.Status.EtcdVersion != etcd35 {
			t.Errorf("backup records etcd version %q, want %s", eb.Status.EtcdVersion, etcd35)
		}
		// dump reads the keys under /data/: those writeKeys wrote, none of the load's.
		want := dump(t, e.EtcdClient(name))
		if len(want) != keys {
			t.Fatalf("the 3.5 cluster holds %d keys under /data/, want %d", len(want), keys)
		}

		// No spec annotation: the new cluster runs the version recorded with the backup.
		e.Create(&etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "v35"},
			Spec: etcdv1beta2.EtcdRestoreSpec{
				EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: restored},
				BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
				RestoreSource:     etcdv1beta2.RestoreSource{S3: s3},
			},
		})
		waitRestore(t, e, "v35", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
		e.WaitAvailable(restored, 3, 90*time.Second)
		requireVersion(t, e, restored, 3, etcd35)
		if got := dump(t, e.EtcdClient(restored)); !maps.Equal(got, want) {
			t.Errorf("the restored 3.5 cluster holds %d keys, the backup's source %d; first differences: %v", len(got), len(want), firstDiffs(got, want, 5))
		}
	})

	t.Run("upgrade 3.5 → 3.6 → 3.7 under writes", func(t *testing.T) {
		before, err := e.Members(name)
		if err != nil {
			t.Fatal(err)
		}
		sawGate := false
		for _, to := range []string{"3.6.16", "3.7.3"} {
			e.Update(name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = to })
			e.Eventually(4*time.Minute, "every member runs "+to, func() error {
				for _, cond := range e.Cluster(name).Status.Conditions {
					if cond.Type == etcdv1beta2.ClusterConditionUpgrading && cond.Reason == etcdv1beta2.ReasonUpgradeWaitsForSnapshot {
						sawGate = true
					}
				}
				return membersRun(e, name, 3, to)
			})
			e.WaitAvailable(name, 3, 90*time.Second)
			flowing(t, load, loadRate)
			requireMemberDetails(t, e, name, 3, to) // members_status_test.go
			if to == "3.6.16" {
				// The 3.7 step is asked for at once: the operator holds it until every
				// member has a raft snapshot past the log written under 3.5, which 3.7
				// cannot replay (a member restarted on 3.7 earlier crash-loops and is
				// replaced, which the member check below would catch).
				requireVersionSince(t, e, name)
			}
		}
		if sawGate {
			t.Logf("the 3.7 step waited for snapshots (%s seen)", etcdv1beta2.ReasonUpgradeWaitsForSnapshot)
		}
		after, err := e.Members(name)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(framework.MemberIDs(before), framework.MemberIDs(after)) {
			t.Errorf("members replaced during in-place upgrades: %v → %v", framework.MemberIDs(before), framework.MemberIDs(after))
		}
	})

	verifyLoad(t, load)
	if got := e.Cluster(name).Status.CurrentVersion; got != "3.7.3" {
		t.Errorf("status.currentVersion %q after the upgrades, want 3.7.3", got)
	}
}

// requireVersion waits until size members of the cluster answer, each running version.
func requireVersion(t *testing.T, e *framework.Env, name string, size int, version string) {
	t.Helper()
	e.Eventually(60*time.Second, fmt.Sprintf("%d members of %s run %s", size, name, version), func() error {
		return membersRun(e, name, size, version)
	})
}

// membersRun is nil when size members of the cluster answer, each running version.
func membersRun(e *framework.Env, name string, size int, version string) error {
	got := e.MemberStatuses(name)
	if len(got) != size {
		return fmt.Errorf("%d members answer", len(got))
	}
	for pod, st := range got {
		if st.Version != version {
			return fmt.Errorf("%s runs %s", pod, st.Version)
		}
	}
	return nil
}

// snapshotCount is the test cluster's --snapshot-count.
const snapshotCount = 200

// requireVersionSince waits until status.versionSince records the raft index by which
// every member ran 3.6 with 3.6 storage: past index 0, since the cluster was created on
// 3.5.
func requireVersionSince(t *testing.T, e *framework.Env, name string) {
	t.Helper()
	e.Eventually(60*time.Second, "status.versionSince 3.6", func() error {
		vs := e.Cluster(name).Status.VersionSince
		if vs == nil || vs.Minor != "3.6" || vs.RaftIndex <= 0 {
			return fmt.Errorf("status.versionSince %+v", vs)
		}
		return nil
	})
}
