package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// TestRestoreFromPVC backs a live 3-member cluster up into a claim (the backup pod of
// the EtcdBackup controller), restores that file into a new cluster (each bootstrap
// member's init container mounts the claim read-only and runs the operator binary's
// restore subcommand) and compares every key. Then a damaged copy of the backup, whose
// checksum sidecar no longer matches, is restored: the init containers refuse it, the
// restore reports RestoreStepFailed and no member ever starts.
func TestRestoreFromPVC(t *testing.T) {
	const source, restored, claim, key, keys = "pvcsource", "frompvc", "restore-backups", "snaps/for-restore.db", 150
	ctx := context.Background()

	e := setupWithOperatorImage(t)

	// ReadWriteOnce: every pod of the bench runs on its one node.
	createClaim(e, claim)
	srcCli := startAvailable(e, source, 3)
	writeKeys(e, srcCli, keys, "/data", "pvc-value-")
	want := dump(t, srcCli)
	if len(want) != keys {
		t.Fatalf("source holds %d keys, want %d", len(want), keys)
	}

	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-for-restore", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", source)},
			StorageType:   etcdv1beta2.BackupStorageTypePVC,
			BackupSource:  etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: claim, Path: key}},
		},
	})
	e.Eventually(3*time.Minute, "PVC backup succeeded", func() error {
		var eb etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "pvc-for-restore"}, &eb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("backup condition %+v", cond)
		}
		return nil
	})
	// Data written after the backup must not appear in the restored cluster.
	if _, err := srcCli.Put(ctx, "/data/after-backup", "x"); err != nil {
		t.Fatal(err)
	}

	pvcRestore := func(name, cluster, path string) *etcdv1beta2.EtcdRestore {
		return &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: etcdv1beta2.EtcdRestoreSpec{
				EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: cluster},
				BackupStorageType: etcdv1beta2.BackupStorageTypePVC,
				RestoreSource:     etcdv1beta2.RestoreSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: claim, Path: path}},
			},
		}
	}

	t.Run("into a new cluster", func(t *testing.T) {
		e.Create(pvcRestore("from-pvc", restored, key))
		er := waitRestore(t, e, "from-pvc", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, 3*time.Minute)
		if c := meta.FindStatusCondition(er.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded); !strings.Contains(c.Message, "pvc://"+claim+"/"+key) {
			t.Errorf("condition message %q does not name the backup", c.Message)
		}
		e.WaitAvailable(restored, 3, 60*time.Second)
		for name, p := range e.MemberPods(restored) {
			st := p.Status.InitContainerStatuses
			if len(st) != 1 || st[0].Name != render.RestoreContainerName || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
				t.Errorf("member %s: init container statuses %+v", name, st)
			}
			// The claim is mounted read-only into the init container only.
			for _, v := range p.Spec.Volumes {
				if v.Name == render.RestoreBackupVolumeName && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim || !v.PersistentVolumeClaim.ReadOnly) {
					t.Errorf("member %s: backup volume %+v", name, v)
				}
			}
		}
		noSharedMemberIDs(t, e, source, restored)
		if got := dump(t, e.EtcdClient(restored)); !reflect.DeepEqual(got, want) {
			t.Errorf("restored cluster holds %d keys, backup %d; first differences: %v", len(got), len(want), firstDiffs(got, want, 5))
		}
	})

	t.Run("a damaged file is refused by the restore step", func(t *testing.T) {
		// The bench runs in this process: the claim's volume is a directory here. The
		// copy keeps the original's sidecar, so its recorded SHA-256 no longer matches.
		dir := claimDir(t, e, claim)
		data, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		sidecar, err := os.ReadFile(filepath.Join(dir, key+".meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		bad := "snaps/damaged.db"
		// Owned and readable like the backup pod's own files (it runs as a non-root user):
		// only the content is damaged.
		for _, f := range []struct {
			from, to string
			data     []byte
		}{{key, bad, data}, {key + ".meta.json", bad + ".meta.json", sidecar}} {
			st, err := os.Stat(filepath.Join(dir, f.from))
			if err != nil {
				t.Fatal(err)
			}
			to := filepath.Join(dir, f.to)
			if err := os.WriteFile(to, f.data, st.Mode().Perm()); err != nil {
				t.Fatal(err)
			}
			sys := st.Sys().(*syscall.Stat_t)
			if err := os.Chown(to, int(sys.Uid), int(sys.Gid)); err != nil {
				t.Fatal(err)
			}
		}
		e.Create(pvcRestore("from-damaged", "damaged", bad))
		er := waitRestore(t, e, "from-damaged", metav1.ConditionFalse, etcdv1beta2.ReasonRestoreStepFailed, 2*time.Minute)
		if !strings.Contains(strings.ToLower(er.Status.Reason), "checksum") {
			t.Errorf("status.reason %q does not tell the checksum failed", er.Status.Reason)
		}
		for name, p := range e.MemberPods("damaged") {
			for _, st := range p.Status.ContainerStatuses {
				if st.State.Running != nil || st.State.Terminated != nil || st.RestartCount > 0 {
					t.Errorf("member %s: etcd container started from a damaged backup: %+v", name, st)
				}
			}
		}
		// The good backup file is untouched by either restore.
		if after, err := os.ReadFile(filepath.Join(dir, key+".meta.json")); err != nil || string(after) != string(sidecar) {
			t.Errorf("backup sidecar changed: %v", err)
		}
		if err := e.C.Delete(ctx, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "damaged", Namespace: "default"}}); err != nil {
			t.Errorf("delete the damaged cluster: %v", err)
		}
	})
}
