package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/controllers/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestRestoreFromS3 backs a live 3-member cluster up into MinIO, restores the backup into
// a new cluster (its members' init containers run the freshly built operator binary's
// restore subcommand) and compares every key; then a restore naming an existing cluster
// is refused and that cluster keeps its members, unless the restore is annotated to
// replace it: then the cluster is recreated with the backup's keys and new members.
func TestRestoreFromS3(t *testing.T) {
	const source, restored, keys = "src", "restored", 200
	ctx := context.Background()

	// The restore init containers run the operator's image: this build.
	e := setupWithOperatorImage(t)

	srv := backupStore(t, e)
	s3 := func(path string) *etcdv1beta2.S3BackupSource {
		return &etcdv1beta2.S3BackupSource{Path: backupBucket + "/" + path, AWSSecret: "aws", Endpoint: srv.Endpoint(), ForcePathStyle: true}
	}

	srcCli := startAvailable(e, source, 3)
	writeKeys(e, srcCli, keys, "/data", "value-")
	want := dump(t, srcCli)
	if len(want) != keys {
		t.Fatalf("source holds %d keys, want %d", len(want), keys)
	}

	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "for-restore"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", source)},
			StorageType:   etcdv1beta2.BackupStorageTypeS3,
			BackupSource:  etcdv1beta2.BackupSource{S3: s3("restore/src.db")},
		},
	})
	e.Eventually(60*time.Second, "backup succeeded", func() error {
		var eb etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "for-restore"}, &eb); err != nil {
			return err
		}
		if !eb.Status.Succeeded {
			return fmt.Errorf("backup status %+v", eb.Status)
		}
		return nil
	})

	newRestore := func(name, cluster string) *etcdv1beta2.EtcdRestore {
		return &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: etcdv1beta2.EtcdRestoreSpec{
				EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: cluster},
				BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
				RestoreSource:     etcdv1beta2.RestoreSource{S3: s3("restore/src.db")},
			},
		}
	}

	t.Run("into a new cluster", func(t *testing.T) {
		e.Create(newRestore("to-new", restored))
		waitRestore(t, e, "to-new", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
		c := e.WaitAvailable(restored, 3, 60*time.Second)
		if len(c.OwnerReferences) != 0 {
			t.Errorf("restored cluster has owner references %v", c.OwnerReferences)
		}
		// Every bootstrap member ran the restore step, successfully.
		for name, p := range e.MemberPods(restored) {
			st := p.Status.InitContainerStatuses
			if len(st) != 1 || st[0].Name != render.RestoreContainerName || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
				t.Errorf("member %s: init container statuses %+v", name, st)
			}
		}
		// A new cluster: same data, its own members (the token includes the new
		// cluster's UID, so no ID can collide with the source's).
		noSharedMemberIDs(t, e, source, restored)
		got := dump(t, e.EtcdClient(restored))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("restored cluster holds %d keys, source %d; first differences: %v", len(got), len(want), firstDiffs(got, want, 5))
		}

		// Deleting the restore leaves its cluster alone.
		if err := e.C.Delete(ctx, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "to-new", Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
		e.Eventually(30*time.Second, "restore deleted", func() error {
			var er etcdv1beta2.EtcdRestore
			if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "to-new"}, &er); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		e.WaitAvailable(restored, 3, 30*time.Second)
	})

	t.Run("a corrupted backup creates nothing", func(t *testing.T) {
		mc := srv.Client(t)
		data, _ := srv.ReadObject(t, backupBucket, "restore/src.db")
		// The checksum of the good bytes, then one byte rots.
		sum := sha256.Sum256(data)
		data[len(data)/2] ^= 0xff
		if _, err := mc.PutObject(ctx, backupBucket, "restore/corrupt.db", bytes.NewReader(data), int64(len(data)),
			minio.PutObjectOptions{UserMetadata: map[string]string{"sha256": fmt.Sprintf("%x", sum)}}); err != nil {
			t.Fatal(err)
		}
		er := newRestore("from-corrupt", "corrupt")
		er.Spec.S3 = s3("restore/corrupt.db")
		e.Create(er)
		got := waitRestore(t, e, "from-corrupt", metav1.ConditionFalse, etcdv1beta2.ReasonChecksumMismatch, 60*time.Second)
		if !strings.Contains(got.Status.Reason, "corrupt") {
			t.Errorf("status.reason %q", got.Status.Reason)
		}
		var c etcdv1beta2.EtcdCluster
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "corrupt"}, &c); !apierrors.IsNotFound(err) {
			t.Errorf("a cluster was created from a corrupted backup: %v", err)
		}
	})

	t.Run("refused when the name is taken", func(t *testing.T) {
		before, err := e.Members(source)
		if err != nil {
			t.Fatal(err)
		}
		srcBefore := e.Cluster(source)
		e.Create(newRestore("over-existing", source))
		er := waitRestore(t, e, "over-existing", metav1.ConditionFalse, etcdv1beta2.ReasonClusterExists, 60*time.Second)
		if er.Status.Succeeded || er.Status.Reason == "" {
			t.Errorf("status %+v", er.Status)
		}
		srcAfter := e.WaitAvailable(source, 3, 30*time.Second)
		after, err := e.Members(source)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(framework.MemberIDs(before), framework.MemberIDs(after)) {
			t.Errorf("members changed: %v -> %v", framework.MemberIDs(before), framework.MemberIDs(after))
		}
		if srcAfter.Generation != srcBefore.Generation || !reflect.DeepEqual(srcAfter.Annotations, srcBefore.Annotations) {
			t.Errorf("existing cluster changed: generation %d -> %d, annotations %v -> %v", srcBefore.Generation, srcAfter.Generation, srcBefore.Annotations, srcAfter.Annotations)
		}
		if got := dump(t, srcCli); !reflect.DeepEqual(got, want) {
			t.Errorf("existing cluster's data changed: %d keys", len(got))
		}
	})

	t.Run("replaces an existing cluster when annotated", func(t *testing.T) {
		// The victim is the cluster restored above, changed since: a key rewritten, one
		// added. After the replacement it must hold exactly the backup's keys again,
		// with new members.
		victimCli := e.EtcdClient(restored)
		e.Eventually(30*time.Second, "victim changed", func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := victimCli.Put(cctx, "/data/0000", "changed after the backup"); err != nil {
				return err
			}
			_, err := victimCli.Put(cctx, "/data/victim-only", "x")
			return err
		})
		oldMembers, err := e.Members(restored)
		if err != nil {
			t.Fatal(err)
		}
		old := e.Cluster(restored)
		er := newRestore("replace", restored)
		er.Annotations = map[string]string{etcdrestore.ReplaceExistingClusterAnnotation: "true"}
		e.Create(er)
		got := waitRestore(t, e, "replace", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 4*time.Minute)
		wantRecord := fmt.Sprintf(`{"name":%q,"uid":%q}`, restored, old.UID)
		if rec := got.Annotations[etcdrestore.ReplacedClusterAnnotation]; rec != wantRecord {
			t.Errorf("replaced-cluster record %q, want %s", rec, wantRecord)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded); !strings.Contains(c.Message, string(old.UID)) {
			t.Errorf("status does not name the deleted cluster's UID %s: %q", old.UID, c.Message)
		}
		var evs corev1.EventList
		if err := e.C.List(ctx, &evs, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		deleted := false
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "EtcdRestore" && ev.InvolvedObject.Name == "replace" && ev.Reason == "DeletedCluster" && strings.Contains(ev.Message, string(old.UID)) {
				deleted = true
			}
		}
		if !deleted {
			t.Errorf("no DeletedCluster event naming uid %s", old.UID)
		}
		c := e.WaitAvailable(restored, 3, 60*time.Second)
		if c.UID == old.UID {
			t.Fatalf("cluster %s was not recreated (uid %s)", restored, c.UID)
		}
		// The backup was checked in a snapshot check pod (gone now), and the object it
		// checked, as the operator hashed it itself, was pinned before the delete: the
		// new members restore exactly that key and SHA-256.
		var pinned struct {
			Key    string `json:"key"`
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal([]byte(got.Annotations[etcdrestore.CheckedObjectAnnotation]), &pinned); err != nil || pinned.Key == "" || len(pinned.SHA256) != 64 {
			t.Errorf("verified-object record %q (%v)", got.Annotations[etcdrestore.CheckedObjectAnnotation], err)
		}
		if src, err := render.Restore(c); err != nil || src == nil || src.S3 == nil || src.S3.Path != backupBucket+"/"+pinned.Key || src.SHA256 != pinned.SHA256 {
			t.Errorf("new cluster restores %+v (%v), not the verified object %+v", src, err, pinned)
		}
		var checkPod corev1.Pod
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: render.SnapshotCheckPodName("replace", "check")}, &checkPod); !apierrors.IsNotFound(err) {
			t.Errorf("snapshot check pod left behind: %v", err)
		}
		newMembers, err := e.Members(restored)
		if err != nil {
			t.Fatal(err)
		}
		for id := range framework.MemberIDs(newMembers) {
			if _, shared := framework.MemberIDs(oldMembers)[id]; shared {
				t.Errorf("replacement shares member ID %x with the deleted cluster", id)
			}
		}
		if got := dump(t, e.EtcdClient(restored)); !reflect.DeepEqual(got, want) {
			t.Errorf("replaced cluster holds %d keys, backup %d; first differences: %v", len(got), len(want), firstDiffs(got, want, 5))
		}
		// The source was never touched.
		if got := dump(t, srcCli); !reflect.DeepEqual(got, want) {
			t.Errorf("source cluster's data changed: %d keys", len(got))
		}
	})
}

// waitRestore waits for the restore's Succeeded condition to have the given status and reason.
func waitRestore(t *testing.T, e *framework.Env, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *etcdv1beta2.EtcdRestore {
	t.Helper()
	var er etcdv1beta2.EtcdRestore
	e.Eventually(timeout, fmt.Sprintf("restore %s condition %s/%s", name, status, reason), func() error {
		if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &er); err != nil {
			return err
		}
		c := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("status %+v", er.Status)
		}
		return nil
	})
	return &er
}

// dump reads every key under /data/ (with retries: the client Service may still be
// settling on a new cluster).
func dump(t *testing.T, cli *clientv3.Client) map[string]string {
	t.Helper()
	var resp *clientv3.GetResponse
	err := framework.Poll(30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		resp, err = cli.Get(ctx, "/data/", clientv3.WithPrefix())
		return err
	})
	if err != nil {
		t.Fatalf("read keys: %v", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

func firstDiffs(got, want map[string]string, n int) []string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("%s: got %q want %q", k, got[k], v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: unexpected", k))
		}
	}
	if len(out) > n {
		out = out[:n]
	}
	return out
}
