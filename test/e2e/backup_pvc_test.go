package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

// TestBackupToPVC backs a live 3-member cluster up into a PersistentVolumeClaim: the
// operator runs a backup pod (its own freshly built binary as the operator image, the
// claim mounted) and copies the pod's result into status. The test then reads the
// volume's directory on the bench directly: the snapshot is there with its checksum
// sidecar, the checksum matches, etcdutl accepts the file, and the revision in status is
// the one recorded with the file. The pod is gone afterwards, and deleting the EtcdBackup
// leaves the backup in place.
func TestBackupToPVC(t *testing.T) {
	const source, claim, key, keys = "pvcsrc", "backups", "snaps/one.db", 100
	ctx := context.Background()

	e := setupWithOperatorImage(t)

	createClaim(e, claim)
	cli := startAvailable(e, source, 3)
	writeKeys(e, cli, keys, "/pvc", "value-")
	resp, err := cli.Get(ctx, "/pvc/0000")
	if err != nil {
		t.Fatal(err)
	}
	revAfterWrites := resp.Header.Revision

	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "to-pvc", Namespace: "default",
			Annotations: map[string]string{etcdv1beta2.BackupVerifyAfterEachAnnotation: "true"}},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", source)},
			StorageType:   etcdv1beta2.BackupStorageTypePVC,
			BackupSource:  etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: claim, Path: key}},
		},
	})
	var eb etcdv1beta2.EtcdBackup
	e.Eventually(3*time.Minute, "PVC backup succeeded", func() error {
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "to-pvc"}, &eb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
		if cond == nil {
			return errors.New("no Succeeded condition yet")
		}
		if cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("Succeeded=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		}
		return nil
	})
	t.Logf("status: %+v", eb.Status)
	// Verified after the backup: a pod with the claim mounted read-only restored it.
	e.Eventually(3*time.Minute, "PVC backup verified", func() error {
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "to-pvc"}, &eb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionVerified)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("Verified %+v", cond)
		}
		return nil
	})
	if eb.Status.LastVerifiedKey != key || eb.Status.LastVerifiedRevision != eb.Status.EtcdRevision {
		t.Errorf("lastVerifiedKey %q revision %d, want %q and %d", eb.Status.LastVerifiedKey, eb.Status.LastVerifiedRevision, key, eb.Status.EtcdRevision)
	}
	if !eb.Status.Succeeded || eb.Status.Reason != "" {
		t.Errorf("status succeeded=%v reason=%q", eb.Status.Succeeded, eb.Status.Reason)
	}
	if eb.Status.EtcdRevision < revAfterWrites {
		t.Errorf("status revision %d, want ≥ %d (the revision after the writes)", eb.Status.EtcdRevision, revAfterWrites)
	}
	if eb.Status.EtcdVersion != "3.6.16" {
		t.Errorf("status version %q, want the members' 3.6.16", eb.Status.EtcdVersion)
	}

	// The backup pod is deleted once its result is recorded.
	e.Eventually(30*time.Second, "backup pod deleted", func() error {
		var p corev1.Pod
		err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "to-pvc-backup"}, &p)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("backup pod still there (phase %s, err %v)", p.Status.Phase, err)
	})

	// The bench runs in this process: the claim's volume is a directory here.
	dir := claimDir(t, e, claim)
	data := filepath.Join(dir, key)
	if _, err := os.Stat(data + ".meta.json"); err != nil {
		t.Fatalf("checksum sidecar: %v", err)
	}
	store, err := backup.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	rc, obj, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc) // verifies the SHA-256 at EOF
	rc.Close()
	if err != nil || n == 0 || obj.SHA256 == "" {
		t.Fatalf("read back %d bytes, sha256 %q: %v", n, obj.SHA256, err)
	}
	if got := obj.Metadata["etcd-revision"]; got != strconv.FormatInt(eb.Status.EtcdRevision, 10) {
		t.Errorf("file records revision %s, status %d", got, eb.Status.EtcdRevision)
	}
	// etcdutl, the restore tool, accepts the file and sees every key written.
	var st struct {
		Revision  int64 `json:"revision"`
		TotalKey  int   `json:"totalKey"`
		TotalSize int64 `json:"totalSize"`
	}
	out, err := exec.Command(etcdtest.Binary(t, "v3.6.16", "etcdutl"), "snapshot", "status", data, "-w", "json").Output()
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v\n%s", err, out)
	}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&st); err != nil {
		t.Fatalf("etcdutl output %q: %v", out, err)
	}
	if st.Revision < revAfterWrites || st.TotalKey < keys {
		t.Errorf("snapshot status %+v: want revision ≥ %d and ≥ %d keys", st, revAfterWrites, keys)
	}

	// Endpoints of no cluster of the namespace are refused before a pod is created.
	e.Create(&etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-unreachable", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{"http://nothing-client.default.svc:2379"},
			StorageType:   etcdv1beta2.BackupStorageTypePVC,
			BackupSource:  etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: claim, Path: "snaps/never.db"}},
			BackupPolicy:  &etcdv1beta2.BackupPolicy{TimeoutInSecond: 15},
		},
	})
	e.Eventually(90*time.Second, "unreachable cluster reported", func() error {
		var bad etcdv1beta2.EtcdBackup
		if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "pvc-unreachable"}, &bad); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(bad.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonEndpointsRefused || bad.Status.Succeeded {
			return fmt.Errorf("condition %+v, want Succeeded=False %s", cond, etcdv1beta2.ReasonEndpointsRefused)
		}
		return nil
	})
	if err := e.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "pvc-unreachable-backup"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("a backup pod was created for refused endpoints: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "snaps/never.db")); !os.IsNotExist(err) {
		t.Errorf("a failed backup left a file: %v", err)
	}

	// Deleting the EtcdBackup never deletes the stored backup.
	if err := e.C.Delete(ctx, &eb); err != nil {
		t.Fatal(err)
	}
	e.Eventually(30*time.Second, "EtcdBackup gone", func() error {
		err := e.C.Get(ctx, client.ObjectKeyFromObject(&eb), &etcdv1beta2.EtcdBackup{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	for _, p := range []string{data, data + ".meta.json"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("after deleting the EtcdBackup: %v", err)
		}
	}
}

// claimDir returns the local directory of the bench volume bound to a claim.
func claimDir(t *testing.T, e *framework.Env, claim string) string {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := e.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: claim}, &pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.VolumeName == "" {
		t.Fatalf("claim %s is not bound", claim)
	}
	var pv corev1.PersistentVolume
	if err := e.C.Get(context.Background(), client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		t.Fatal(err)
	}
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	t.Fatalf("volume %s is neither local nor hostPath", pv.Name)
	return ""
}
