package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdcluster"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestRestoreVerifiesBackupBeforeReplacing: backups stored as CoreOS's operator stored
// them (raw objects, no checksum of ours) are judged by the snapshot itself. A restore
// annotated replace-existing-cluster from garbage or from a truncated snapshot is
// refused before anything is deleted: the existing cluster keeps its UID, members and
// every key, including those written after the snapshot. A valid raw snapshot restores.
func TestRestoreVerifiesBackupBeforeReplacing(t *testing.T) {
	const prod = "prod"
	ctx := context.Background()
	e := setupWithOperatorImage(t)
	srv := backupStore(t, e)

	cli := startAvailable(e, prod, 1)
	writeKeys(e, cli, 50, "/data", "value-")
	snap := snapshotOf(t, e, cli)
	atSnapshot := dump(t, cli)
	writeKeys(e, cli, 10, "/data/after-snapshot", "only-live-")
	live := dump(t, cli)

	garbage := make([]byte, len(snap))
	if _, err := rand.Read(garbage); err != nil {
		t.Fatal(err)
	}
	mc := srv.Client(t)
	for key, b := range map[string][]byte{
		"coreos/good.db":      snap,
		"coreos/garbage.db":   garbage,
		"coreos/truncated.db": snap[:len(snap)-4096],
	} {
		if _, err := mc.PutObject(ctx, backupBucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	restoreFrom := func(name, cluster, key string) *etcdv1beta2.EtcdRestore {
		return &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: etcdv1beta2.EtcdRestoreSpec{
				EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: cluster},
				BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
				RestoreSource: etcdv1beta2.RestoreSource{S3: &etcdv1beta2.S3BackupSource{
					Path: backupBucket + "/" + key, AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}},
			},
		}
	}

	before := e.Cluster(prod)
	membersBefore, err := e.Members(prod)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"coreos/garbage.db", "coreos/truncated.db"} {
		name := "replace-from-" + strings.TrimSuffix(strings.TrimPrefix(key, "coreos/"), ".db")
		t.Run(name, func(t *testing.T) {
			er := restoreFrom(name, prod, key)
			er.Annotations = map[string]string{etcdrestore.ReplaceExistingClusterAnnotation: "true"}
			e.Create(er)
			got := waitRefusedKeeping(t, e, name, before)
			c := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
			if c.Reason != etcdv1beta2.ReasonInvalidSnapshot || !strings.Contains(c.Message, "was not touched") || !strings.Contains(c.Message, key) {
				t.Errorf("condition %+v", c)
			}
			if _, ok := got.Annotations[etcdrestore.ReplacedClusterAnnotation]; ok {
				t.Errorf("the refused restore recorded a replacement")
			}
			waitEvent(e, "EtcdRestore", name, etcdv1beta2.ReasonInvalidSnapshot)
		})
	}
	after := e.WaitAvailable(prod, 1, 30*time.Second)
	if after.UID != before.UID || after.Generation != before.Generation || !after.DeletionTimestamp.IsZero() {
		t.Errorf("cluster %s changed: uid %s -> %s, generation %d -> %d", prod, before.UID, after.UID, before.Generation, after.Generation)
	}
	membersAfter, err := e.Members(prod)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(framework.MemberIDs(membersBefore), framework.MemberIDs(membersAfter)) {
		t.Errorf("members changed: %v -> %v", framework.MemberIDs(membersBefore), framework.MemberIDs(membersAfter))
	}
	if got := dump(t, cli); !reflect.DeepEqual(got, live) {
		t.Errorf("the existing cluster's data changed: %d keys, want %d; %v", len(got), len(live), firstDiffs(got, live, 5))
	}

	t.Run("a valid CoreOS-era object restores", func(t *testing.T) {
		er := restoreFrom("from-coreos", "from-coreos", "coreos/good.db")
		er.Annotations = map[string]string{etcdrestore.RestoreClusterSpecAnnotation: `{"size": 1}`}
		e.Create(er)
		waitRestore(t, e, "from-coreos", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
		e.WaitAvailable("from-coreos", 1, 60*time.Second)
		if got := dump(t, e.EtcdClient("from-coreos")); !reflect.DeepEqual(got, atSnapshot) {
			t.Errorf("restored %d keys, snapshot had %d; %v", len(got), len(atSnapshot), firstDiffs(got, atSnapshot, 5))
		}
	})
}

// snapshotOf streams a snapshot of the cluster behind cli, as etcdctl snapshot save
// would store it (database and etcd's integrity hash).
func snapshotOf(t *testing.T, e *framework.Env, cli *clientv3.Client) []byte {
	t.Helper()
	var b []byte
	e.Eventually(60*time.Second, "snapshot", func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, err := cli.Snapshot(sctx)
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err = io.ReadAll(rc)
		return err
	})
	return b
}

// waitRefusedKeeping waits for the restore to be refused (Succeeded=False with a reason
// other than the transient ClusterExists race), failing at once if the cluster it
// names is being deleted or has been replaced meanwhile.
func waitRefusedKeeping(t *testing.T, e *framework.Env, name string, keep *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdRestore {
	t.Helper()
	var er etcdv1beta2.EtcdRestore
	e.Eventually(90*time.Second, "restore "+name+" refused", func() error {
		var c etcdv1beta2.EtcdCluster
		err := e.C.Get(context.Background(), client.ObjectKeyFromObject(keep), &c)
		if err != nil || c.UID != keep.UID || !c.DeletionTimestamp.IsZero() {
			t.Fatalf("cluster %s was deleted or replaced for restore %s (err %v, uid %s, deleting %v)", keep.Name, name, err, c.UID, !c.DeletionTimestamp.IsZero())
		}
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &er); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
		if cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("status %+v", er.Status)
		}
		return nil
	})
	return &er
}

// waitEvent waits for an event with the reason on the object (events are recorded
// asynchronously).
func waitEvent(e *framework.Env, kind, name, reason string) {
	e.Eventually(10*time.Second, fmt.Sprintf("%s event on %s %s", reason, kind, name), func() error {
		var evs corev1.EventList
		if err := e.C.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && ev.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(evs.Items))
	})
}

// TestRestoreOfVerifiedBackupRunsChecks: an EtcdBackup verified after its backup records
// the verified object and its SHA-256 but no signature: the verification's report comes
// from a pod in the tenant's namespace, which the operator cannot tell from one the tenant
// made or altered (controllers/etcdbackup/verify_pin.go). An EtcdRestore of that
// EtcdBackup runs the snapshot checks; after the tenant writes a well-formed signature
// into the EtcdBackup's status, a second restore still runs them, and the cluster says
// why in an event. Both restored clusters hold exactly the backed-up keys.
func TestRestoreOfVerifiedBackupRunsChecks(t *testing.T) {
	const source, backupName = "vsrc", "verified"
	ctx := context.Background()
	e := setupWithOperatorImage(t)
	srv := backupStore(t, e)

	cli := startAvailable(e, source, 1)
	writeKeys(e, cli, 40, "/data", "value-")
	backedUp := dump(t, cli)

	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: backupName, Annotations: map[string]string{etcdv1beta2.BackupVerifyAfterEachAnnotation: "true"}},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", source)},
			StorageType:   etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
				Path: backupBucket + "/" + source + "/verified.db", AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}},
		},
	})
	var eb etcdv1beta2.EtcdBackup
	e.Eventually(5*time.Minute, "backup verified", func() error {
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: backupName}, &eb); err != nil {
			return err
		}
		c := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionVerified)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Verified %+v", c)
		}
		return nil
	})
	st := eb.Status
	if st.LastVerifiedKey != source+"/verified.db" || len(st.LastVerifiedSHA256) != 64 || st.LastVerifiedPinSignature != "" {
		t.Fatalf("verified record: key %q sha256 %q signature %q; want no signature", st.LastVerifiedKey, st.LastVerifiedSHA256, st.LastVerifiedPinSignature)
	}

	restoreOf := func(name, cluster string) {
		t.Helper()
		e.Create(&etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				etcdv1beta2.RestoreBackupRefAnnotation:   backupName,
				etcdrestore.RestoreClusterSpecAnnotation: `{"size": 1}`,
			}},
			Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: cluster}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
		})
		waitRestore(t, e, name, metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
		e.WaitAvailable(cluster, 1, 60*time.Second)
		if got := dump(t, e.EtcdClient(cluster)); !reflect.DeepEqual(got, backedUp) {
			t.Errorf("%s: restored %d keys, the backup had %d; %v", cluster, len(got), len(backedUp), firstDiffs(got, backedUp, 5))
		}
	}

	t.Run("a verified backup's restore runs the checks", func(t *testing.T) {
		restoreOf("unsigned", "unsigned")
		flag, reused := restoreStepOf(t, e, "unsigned")
		if flag || reused {
			t.Errorf("--checks-passed-for-pin rendered %v, step reports snapshotChecksReused %v; want neither", flag, reused)
		}
	})

	t.Run("a signature the tenant writes makes no difference", func(t *testing.T) {
		var cur etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: backupName}, &cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		cur.Status.LastVerifiedPinSignature = strings.Repeat("0a", 32) // well-formed, not the operator's
		if err := e.C.Status().Patch(ctx, &cur, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		restoreOf("tampered", "checked")
		flag, reused := restoreStepOf(t, e, "checked")
		if flag || reused {
			t.Errorf("--checks-passed-for-pin rendered %v, step reports snapshotChecksReused %v; want neither", flag, reused)
		}
		waitEvent(e, "EtcdCluster", "checked", etcdcluster.ReasonRestorePinNotTrusted)
	})
}

// restoreStepOf reads the restore init container of the (one) member of cluster: whether
// it was given --checks-passed-for-pin, and what its log's final line reports as
// snapshotChecksReused (failing the test if it reports neither value).
func restoreStepOf(t *testing.T, e *framework.Env, cluster string) (flag, reused bool) {
	t.Helper()
	var pods corev1.PodList
	if err := e.C.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabelsSelector{Selector: render.ClusterSelector(cluster)}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d member pods of %s, want 1", len(pods.Items), cluster)
	}
	p := pods.Items[0]
	for _, ic := range p.Spec.InitContainers {
		if ic.Name == render.RestoreContainerName {
			flag = slices.Contains(ic.Args, "--checks-passed-for-pin")
		}
	}
	logs, err := e.Bench.PodLogs(context.Background(), "default", p.Name, render.RestoreContainerName)
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", p.Name, render.RestoreContainerName, err)
	}
	var done string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"restore step done"`) {
			done = line
		}
	}
	switch {
	case strings.Contains(done, `"snapshotChecksReused":true`):
		return flag, true
	case strings.Contains(done, `"snapshotChecksReused":false`):
		return flag, false
	}
	t.Fatalf("%s: the restore step reported no snapshotChecksReused; its log:\n%s", p.Name, logs)
	return
}
