package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestHibernation: a three-member cluster on claims with keys is scaled to 0 the way a
// user would (kubectl scale --replicas=0): every member pod stops, the claims stay (same
// UIDs), status reads Hibernated, and a backup due meanwhile is skipped, not failed. The
// operator is then stopped, the cluster scaled back to 3, and a new operator process,
// which remembers nothing, brings the same members (IDs) back on their claims: same
// cluster ID, every key, Available, never reported lost.
func TestHibernation(t *testing.T) {
	e := framework.Setup(t)
	ctx := context.Background()
	const name = "hibernate"
	createOnClaims(e, name, 3, 180*time.Second)
	writeKeys(e, e.EtcdClient(name), 100, "/data", "v") // dump reads /data/
	before, err := e.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	clusterID := e.Cluster(name).Status.ClusterID
	claims := func() map[string]types.UID { return claimUIDs(t, e, name) }
	claimsBefore := claims()
	if len(claimsBefore) != 3 {
		t.Fatalf("claims %v, want one per member", claimsBefore)
	}
	lost := watchNeverLost(e, name)
	kubectl := func(args ...string) {
		t.Helper()
		bin := filepath.Join(testenv.CacheDir(), "envtest-"+testenv.K8sVersion, "kubectl")
		if out, err := exec.Command(bin, append([]string{"--kubeconfig", e.Bench.Kubeconfig(), "-n", "default"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}

	start := time.Now()
	kubectl("scale", "etcd", name, "--replicas=0")
	e.Eventually(120*time.Second, "the cluster hibernated", func() error {
		cl := e.Cluster(name)
		if pods := e.MemberPods(name); len(pods) > 0 {
			return fmt.Errorf("%d member pods left (reason %s)", len(pods), cl.Status.Reason)
		}
		if cl.Status.Phase != etcdv1beta2.ClusterPhaseHibernated {
			return fmt.Errorf("phase %q reason %q", cl.Status.Phase, cl.Status.Reason)
		}
		return nil
	})
	t.Logf("size 0 → Hibernated, no pod, in %v", time.Since(start).Round(time.Second))
	hib := e.Cluster(name)
	if hib.Status.Size != 0 || len(hib.Status.Members.Unready) != 3 {
		t.Errorf("hibernated status size %d members %+v, want 0 and the three members recorded", hib.Status.Size, hib.Status.Members)
	}
	if got := claims(); fmt.Sprint(got) != fmt.Sprint(claimsBefore) {
		t.Errorf("claims while hibernated %v, were %v", got, claimsBefore)
	}

	// A backup due while hibernated is skipped with the reason, not failed.
	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "hibernate-backup", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: name},
			StorageType:  etcdv1beta2.BackupStorageTypePVC,
			BackupSource: etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: "nowhere", Path: "snap.db"}},
		},
	})
	e.Eventually(60*time.Second, "the backup skipped", func() error {
		var eb etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hibernate-backup"}, &eb); err != nil {
			return err
		}
		if failed := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded); failed != nil {
			t.Fatalf("a backup of a hibernated cluster was attempted: %+v", failed)
		}
		s := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSkipped)
		if s == nil || s.Reason != etcdv1beta2.ReasonClusterHibernated || !strings.Contains(s.Message, name) {
			return fmt.Errorf("Skipped condition %+v", s)
		}
		return nil
	})
	if err := e.C.Delete(ctx, &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "hibernate-backup", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}

	// Resume under a new operator process: everything it needs is in status and claims.
	e.StopOperatorNow()
	kubectl("scale", "etcd", name, "--replicas=3")
	e.StartOperator()
	start = time.Now()
	e.WaitAvailable(name, 3, 180*time.Second)
	t.Logf("size 3 → the members back and Available in %v", time.Since(start).Round(time.Second))
	lost.check(t)
	sameMembersAndCluster(t, e, name, before, clusterID)
	if got := claims(); fmt.Sprint(got) != fmt.Sprint(claimsBefore) {
		t.Errorf("claims after resume %v, were %v (a new claim is a new, empty member)", got, claimsBefore)
	}
	got := dump(t, e.EtcdClient(name))
	for i := range 100 {
		k, v := fmt.Sprintf("/data/%04d", i), fmt.Sprintf("v%d", i)
		if got[k] != v {
			t.Fatalf("key %s = %q after hibernation, want %q", k, got[k], v)
		}
	}
	if framework.HasAny(e.EventReasons(name), "QuorumLost", "MemberAdded", "MemberReplaced", "MemberRemoved", "RestoringFromBackup", "ForceNewCluster") {
		t.Errorf("hibernation changed the membership or reported a loss: %v", e.EventReasons(name))
	}
}
