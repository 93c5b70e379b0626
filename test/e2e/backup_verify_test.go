package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// TestBackupVerification verifies a backup in MinIO after it is taken: a throwaway pod
// restores it into a one-member etcd on a real node, which serves the recorded revision
// and key count; the pod is deleted. Then the test truncates the object in MinIO and a
// scheduled verification reports it (Verified=False, ChecksumMismatch, the object
// named) while lastVerified* keep the last good verification.
func TestBackupVerification(t *testing.T) {
	const cluster, keys, name, key = "vf", 120, "verified", "vf/verified.db"
	b := setupBackup(t, cluster, keys)
	ctx := context.Background()

	eb := b.newBackup(name, cluster, key, "aws", nil)
	eb.Annotations = map[string]string{etcdv1beta2.BackupVerifyAfterEachAnnotation: "true"}
	b.Create(eb)
	stored := b.waitCondition(t, name, metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 60*time.Second)

	good := b.waitVerified(t, name, metav1.ConditionTrue, etcdv1beta2.ReasonBackupVerified, 4*time.Minute)
	st := good.Status
	if st.LastVerifiedKey != key || st.LastVerifiedRevision != stored.Status.EtcdRevision || st.LastVerifiedTime == nil {
		t.Errorf("status %+v, want lastVerifiedKey %s and revision %d", st, key, stored.Status.EtcdRevision)
	}
	// The cluster held exactly the keys written (and nothing else) when the backup was taken.
	c := meta.FindStatusCondition(st.Conditions, etcdv1beta2.BackupConditionVerified)
	if want := fmt.Sprintf("with %d keys at that revision", keys); !strings.Contains(c.Message, want) {
		t.Errorf("Verified message %q does not say %q", c.Message, want)
	}
	b.waitVerifyPodGone(t, name)
	if last := gathered(t, "etcd_operator_backup_last_verified_timestamp_seconds", "backup", name); last < float64(st.LastVerifiedTime.Unix()) {
		t.Errorf("last verified metric %v, status says %v", last, st.LastVerifiedTime.Unix())
	}

	// Truncate the object in place, keeping its metadata (so the checksum stored beside
	// it is the original's), then verify it on a schedule of every minute.
	mc := b.minio.Client(t)
	data, info := b.minio.ReadObject(t, backupBucket, key)
	half := data[:len(data)/2]
	if _, err := mc.PutObject(ctx, backupBucket, key, bytes.NewReader(half), int64(len(half)),
		minio.PutObjectOptions{UserMetadata: userMetadata(info.UserMetadata)}); err != nil {
		t.Fatal(err)
	}
	cur := b.getBackup(t, name)
	cur.Annotations[etcdv1beta2.BackupVerifyScheduleAnnotation] = "* * * * *"
	if err := b.C.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	bad := b.waitVerified(t, name, metav1.ConditionFalse, etcdv1beta2.ReasonChecksumMismatch, 4*time.Minute)
	c = meta.FindStatusCondition(bad.Status.Conditions, etcdv1beta2.BackupConditionVerified)
	if !strings.Contains(c.Message, "s3://"+backupBucket+"/"+key) || !strings.Contains(c.Message, "checksum mismatch") {
		t.Errorf("Verified=False message %q does not name the object and what failed", c.Message)
	}
	if bs := bad.Status; bs.LastVerifiedKey != st.LastVerifiedKey || bs.LastVerifiedRevision != st.LastVerifiedRevision || !bs.LastVerifiedTime.Equal(st.LastVerifiedTime) {
		t.Errorf("a failed verification changed lastVerified*: %+v, was %+v", bs, st)
	}
	b.waitVerifyPodGone(t, name)
}

// userMetadata turns the metadata minio-go reads back into what PutObject takes.
func userMetadata(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[strings.TrimPrefix(strings.ToLower(k), "x-amz-meta-")] = v
	}
	return out
}

// waitVerified waits for the backup's Verified condition with the given status and reason.
func (b *backupEnv) waitVerified(t *testing.T, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *etcdv1beta2.EtcdBackup {
	t.Helper()
	var eb *etcdv1beta2.EtcdBackup
	b.Eventually(timeout, fmt.Sprintf("backup %s Verified %s/%s", name, status, reason), func() error {
		eb = b.getBackup(t, name)
		c := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionVerified)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Verified %+v", c)
		}
		return nil
	})
	return eb
}

// waitVerifyPodGone waits until the backup's verification pod no longer exists.
func (b *backupEnv) waitVerifyPodGone(t *testing.T, name string) {
	t.Helper()
	b.Eventually(60*time.Second, "verification pod deleted", func() error {
		var p corev1.Pod
		err := b.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: render.VerifyPodName(name)}, &p)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod %s: %v (phase %s)", render.VerifyPodName(name), err, p.Status.Phase)
	})
}
