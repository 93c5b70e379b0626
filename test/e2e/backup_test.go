package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
	"github.com/etcd-operator/etcd-operator/test/bench"
	"github.com/etcd-operator/etcd-operator/test/framework"
)

const backupBucket = "etcd-backups"

// backupEnv is a bench with a 3-member cluster holding known keys and a MinIO server
// (on 127.0.0.1 inside the bench's network namespace, where the operator runs too).
type backupEnv struct {
	*framework.Env
	minio *miniotest.Server
	store *backup.S3
}

func setupBackup(t *testing.T, cluster string, keys int) *backupEnv {
	t.Helper()
	b := startBackupStore(t, framework.Setup(t))
	b.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws-bad"}, Data: map[string][]byte{
		"credentials": []byte(fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = wrong-secret-value\n", b.minio.AccessKey)),
		"config":      []byte(b.minio.AWSConfigFile())}})

	b.Create(newCluster(cluster, 3))
	b.WaitAvailable(cluster, 3, 120*time.Second)
	cli := b.EtcdClient(cluster)
	writeKeys(b.Env, cli, keys, "/data", "value-")
	return b
}

// startBackupStore starts MinIO with the backup bucket and creates the "aws" Secret
// with its credentials on e.
func startBackupStore(t *testing.T, e *framework.Env) *backupEnv {
	t.Helper()
	srv := miniotest.StartOn(t, bench.ControlPlaneIP)
	srv.MakeBucket(t, backupBucket)
	creds, err := backup.ParseAWSSecret(map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())})
	if err != nil {
		t.Fatal(err)
	}
	store, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: backupBucket, ForcePathStyle: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})
	return &backupEnv{Env: e, minio: srv, store: store}
}

func (b *backupEnv) newBackup(name, cluster, path, secret string, policy *etcdv1beta2.BackupPolicy) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.default.svc:2379", cluster)},
			StorageType:   etcdv1beta2.BackupStorageTypeS3,
			BackupPolicy:  policy,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
				Path: backupBucket + "/" + path, AWSSecret: secret, Endpoint: b.minio.Endpoint(), ForcePathStyle: true,
			}},
		},
	}
}

func (b *backupEnv) getBackup(t *testing.T, name string) *etcdv1beta2.EtcdBackup {
	t.Helper()
	var eb etcdv1beta2.EtcdBackup
	if err := b.C.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &eb); err != nil {
		t.Fatalf("get backup %s: %v", name, err)
	}
	return &eb
}

// waitCondition waits for the backup's Succeeded condition with the given status and reason.
func (b *backupEnv) waitCondition(t *testing.T, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *etcdv1beta2.EtcdBackup {
	t.Helper()
	var eb *etcdv1beta2.EtcdBackup
	b.Eventually(timeout, fmt.Sprintf("backup %s condition %s/%s", name, status, reason), func() error {
		eb = b.getBackup(t, name)
		c := meta.FindStatusCondition(eb.Status.Conditions, etcdv1beta2.BackupConditionSucceeded)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("status %+v", eb.Status)
		}
		return nil
	})
	return eb
}

// snapshotStatus downloads a backup (verifying its checksum) and asks etcdutl what it holds.
func (b *backupEnv) snapshotStatus(t *testing.T, key string) (rev int64, totalKeys int) {
	t.Helper()
	rc, obj, err := b.store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	if len(obj.SHA256) != 64 {
		t.Errorf("%s carries no SHA-256 (metadata %v)", key, obj.Metadata)
	}
	p := filepath.Join(t.TempDir(), "snap.db")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatalf("download %s: %v", key, err)
	}
	f.Close()
	out, err := exec.Command(etcdtest.Binary(t, "v3.6.16", "etcdutl"), "snapshot", "status", p, "-w", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v: %s", err, out)
	}
	var st struct {
		Revision  int64 `json:"revision"`
		TotalKey  int   `json:"totalKey"`
		TotalSize int64 `json:"totalSize"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("etcdutl output %s: %v", out, err)
	}
	return st.Revision, st.TotalKey
}

// TestBackupToS3 takes one-shot and periodic backups of a live cluster into MinIO and
// checks what was stored, the CoreOS status fields, retention, and the failure modes.
func TestBackupToS3(t *testing.T) {
	const cluster, keys = "bk", 200
	b := setupBackup(t, cluster, keys)
	ctx := context.Background()

	t.Run("one-shot", func(t *testing.T) {
		b.Create(b.newBackup("oneshot", cluster, "bk/oneshot.db", "aws", nil))
		eb := b.waitCondition(t, "oneshot", metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 60*time.Second)
		if !eb.Status.Succeeded || eb.Status.Reason != "" || eb.Status.EtcdVersion != "3.6.16" ||
			eb.Status.EtcdRevision < keys || eb.Status.LastSuccessDate.IsZero() {
			t.Errorf("status %+v", eb.Status)
		}
		rev, total := b.snapshotStatus(t, "bk/oneshot.db")
		if total < keys || rev < eb.Status.EtcdRevision {
			t.Errorf("snapshot holds revision %d and %d keys; status says revision %d, %d keys were written", rev, total, eb.Status.EtcdRevision, keys)
		}
		// A one-shot backup is taken once.
		objs, err := b.store.List(ctx, "bk/oneshot")
		if err != nil || len(objs) != 1 {
			t.Errorf("one-shot objects: %v (list: %v)", objs, err)
		}
		// The operator's metrics say so too (its manager runs in this process and
		// registers on controller-runtime's registry).
		last := gathered(t, "etcd_operator_backup_last_success_timestamp_seconds", "backup", "oneshot")
		if last < float64(eb.Status.LastSuccessDate.Unix()) {
			t.Errorf("last success metric %v, status says %v", last, eb.Status.LastSuccessDate.Unix())
		}
		if size := gathered(t, "etcd_operator_backup_size_bytes", "backup", "oneshot"); len(objs) == 1 && size != float64(objs[0].Size) {
			t.Errorf("size metric %v, stored object %d bytes", size, objs[0].Size)
		}
	})

	t.Run("backup-now takes one more backup of a one-shot backup", func(t *testing.T) {
		before := b.getBackup(t, "oneshot").Status.LastSuccessDate
		eb := b.getBackup(t, "oneshot")
		eb.Annotations = map[string]string{etcdv1beta2.BackupNowAnnotation: "e2e-1"}
		if err := b.C.Update(ctx, eb); err != nil {
			t.Fatal(err)
		}
		b.Eventually(60*time.Second, "backup-now honoured", func() error {
			st := b.getBackup(t, "oneshot").Status
			// lastBackupNow is written only by a finished attempt; Succeeded says it stored.
			if st.LastBackupNow != "e2e-1" || !st.Succeeded || st.LastSuccessDate.Before(&before) {
				return fmt.Errorf("lastBackupNow %q, last success %v (was %v)", st.LastBackupNow, st.LastSuccessDate, before)
			}
			return nil
		})
	})

	t.Run("a cron schedule fires at its slot", func(t *testing.T) {
		eb := b.newBackup("cron", cluster, "bk/cron", "aws", &etcdv1beta2.BackupPolicy{MaxBackups: 2})
		eb.Annotations = map[string]string{etcdv1beta2.BackupScheduleAnnotation: "* * * * *"} // every minute
		b.Create(eb)
		// The first slot is the first minute after the resource's creation (the schedule
		// counts from creationTimestamp, whole seconds).
		next := b.getBackup(t, "cron").CreationTimestamp.Truncate(time.Minute).Add(time.Minute)
		// Created seconds before a minute turns, the first run may come before a poll
		// sees the status between (CI saw it run at the slot 1 s after creation); with
		// time to spare, that status must show when it will run.
		if time.Until(next) > 15*time.Second {
			b.Eventually(15*time.Second, "nextScheduleTime shown before the first run", func() error {
				if st := b.getBackup(t, "cron").Status; st.NextScheduleTime == nil || !st.NextScheduleTime.Time.Equal(next) || st.LastScheduleTime != nil {
					return fmt.Errorf("next %v (want %v) last %v", st.NextScheduleTime, next, st.LastScheduleTime)
				}
				return nil
			})
		}
		b.Eventually(90*time.Second, "the scheduled backup stored", func() error {
			st := b.getBackup(t, "cron").Status
			if st.LastScheduleTime == nil || !st.Succeeded {
				return fmt.Errorf("last %v succeeded %v", st.LastScheduleTime, st.Succeeded)
			}
			if !st.LastScheduleTime.Time.Equal(next) {
				return fmt.Errorf("ran for slot %v, want %v", st.LastScheduleTime, next)
			}
			objs, err := backup.Periodic(ctx, b.store, "bk/cron")
			if err != nil || len(objs) == 0 {
				return fmt.Errorf("stored %v, %v", objs, err)
			}
			return nil
		})
		if err := b.C.Delete(ctx, b.getBackup(t, "cron")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("periodic with retention, deleting the CR keeps the backups", func(t *testing.T) {
		eb := b.newBackup("periodic", cluster, "bk/periodic", "aws", &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 2, MaxBackups: 2})
		eb.Finalizers = []string{etcdv1beta2.BackupFinalizer} // as CoreOS's operator left it
		eb.Annotations = map[string]string{etcdv1beta2.BackupCompressionAnnotation: "gzip"}
		b.Create(eb)
		cli := b.EtcdClient(cluster)
		seen := map[string]bool{}
		b.Eventually(90*time.Second, "at least 4 periodic backups taken, only the newest 2 kept", func() error {
			// Writes between backups give each a new revision.
			if _, err := cli.Put(ctx, "/tick", time.Now().String()); err != nil {
				return err
			}
			objs, err := backup.Periodic(ctx, b.store, "bk/periodic")
			if err != nil {
				return err
			}
			for _, o := range objs {
				seen[o.Key] = true
			}
			if len(seen) < 4 || len(objs) != 2 {
				return fmt.Errorf("seen %d backups, %d stored now", len(seen), len(objs))
			}
			return nil
		})
		latest, err := backup.Latest(ctx, b.store, "bk/periodic")
		if err != nil {
			t.Fatal(err)
		}
		rc, obj, err := b.store.Get(ctx, latest.Key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Errorf("reading %s: %v", latest.Key, err)
		}
		rc.Close()
		if obj.Compression != backup.CompressionGzip {
			t.Errorf("%s compression %q, want gzip", latest.Key, obj.Compression)
		}
		if _, _, ok := backup.ParsePeriodicKey("bk/periodic", latest.Key); !ok {
			t.Errorf("%s is not named <path>_v<rev>_<time>", latest.Key)
		}
		st := b.getBackup(t, "periodic").Status
		if !st.Succeeded || st.EtcdRevision == 0 || st.LastSuccessDate.IsZero() {
			t.Errorf("periodic status %+v", st)
		}
		if b.getBackup(t, "periodic").Finalizers != nil {
			t.Errorf("CoreOS finalizer not removed")
		}

		if err := b.C.Delete(ctx, b.getBackup(t, "periodic")); err != nil {
			t.Fatal(err)
		}
		b.Eventually(30*time.Second, "periodic backup CR gone", func() error {
			var eb etcdv1beta2.EtcdBackup
			if err := b.C.Get(ctx, client.ObjectKey{Namespace: "default", Name: "periodic"}, &eb); err == nil {
				return fmt.Errorf("still there: finalizers %v", eb.Finalizers)
			}
			return nil
		})
		// Wait longer than an interval: nothing is deleted, nothing new is taken.
		before, _ := backup.Periodic(ctx, b.store, "bk/periodic")
		time.Sleep(5 * time.Second)
		after, _ := backup.Periodic(ctx, b.store, "bk/periodic")
		if len(before) != 2 || fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("backups changed after the CR was deleted: %v -> %v", before, after)
		}
		if objs, err := b.store.List(ctx, "bk/oneshot"); err != nil || len(objs) != 1 {
			t.Errorf("one-shot backup touched by retention: %v (list: %v)", objs, err)
		}
	})

	t.Run("bad input gets a clear condition", func(t *testing.T) {
		cases := []struct {
			name, secret, path, reason, mention string
			mutate                              func(*etcdv1beta2.EtcdBackup)
		}{
			{"bad-creds", "aws-bad", "bk/x.db", etcdv1beta2.ReasonAccessDenied, "access denied", nil},
			{"no-bucket", "aws", "bk/x.db", etcdv1beta2.ReasonBucketNotFound, "bucket", func(eb *etcdv1beta2.EtcdBackup) {
				eb.Spec.S3.Path = "no-such-bucket/x.db"
			}},
			{"no-secret", "absent-secret", "bk/x.db", etcdv1beta2.ReasonSecretError, "absent-secret", nil},
			{"gcs", "aws", "bk/x.db", etcdv1beta2.ReasonUnsupportedStorageType, "S3-compatible endpoint", func(eb *etcdv1beta2.EtcdBackup) {
				eb.Spec.StorageType = etcdv1beta2.BackupStorageTypeGCS
				eb.Spec.GCS = &etcdv1beta2.GCSBackupSource{Path: "bucket/x.db", GCPSecret: "gcp"}
			}},
			// Endpoints that are not a cluster of the backup's namespace are refused
			// before anything is dialled.
			{"foreign-endpoint", "aws", "bk/x.db", etcdv1beta2.ReasonEndpointsRefused, "spec.etcdEndpoints", func(eb *etcdv1beta2.EtcdBackup) {
				eb.Spec.EtcdEndpoints = []string{"http://127.0.0.1:1"}
			}},
			{"other-namespace", "aws", "bk/x.db", etcdv1beta2.ReasonEndpointsRefused, "spec.etcdEndpoints", func(eb *etcdv1beta2.EtcdBackup) {
				eb.Spec.EtcdEndpoints = []string{fmt.Sprintf("http://%s-client.kube-system.svc:2379", cluster)}
			}},
			{"missing-cluster-ref", "aws", "bk/x.db", etcdv1beta2.ReasonClusterNotFound, "spec.clusterRef.name", func(eb *etcdv1beta2.EtcdBackup) {
				eb.Spec.EtcdEndpoints = nil
				eb.Spec.ClusterRef = &etcdv1beta2.EtcdClusterRef{Name: "no-such-cluster"}
			}},
		}
		for _, c := range cases {
			eb := b.newBackup(c.name, cluster, c.path, c.secret, nil)
			if c.mutate != nil {
				c.mutate(eb)
			}
			b.Create(eb)
		}
		for _, c := range cases {
			eb := b.waitCondition(t, c.name, metav1.ConditionFalse, c.reason, 60*time.Second)
			if eb.Status.Succeeded || !strings.Contains(strings.ToLower(eb.Status.Reason), strings.ToLower(c.mention)) {
				t.Errorf("%s: status.Reason %q should mention %q", c.name, eb.Status.Reason, c.mention)
			}
			if strings.Contains(eb.Status.Reason, "wrong-secret-value") || strings.Contains(eb.Status.Reason, b.minio.SecretKey) {
				t.Errorf("%s: status reveals a secret: %q", c.name, eb.Status.Reason)
			}
			// As a CoreOS script reads it: the raw v1beta2 object carries
			// succeeded: false and the Reason (a typed read would default the field).
			raw := &unstructured.Unstructured{}
			raw.SetGroupVersionKind(etcdv1beta2.GroupVersion.WithKind("EtcdBackup"))
			if err := b.C.Get(ctx, client.ObjectKeyFromObject(eb), raw); err != nil {
				t.Fatalf("%s: read as v1beta2: %v", c.name, err)
			}
			succeeded, found, _ := unstructured.NestedBool(raw.Object, "status", "succeeded")
			reason, _, _ := unstructured.NestedString(raw.Object, "status", "Reason")
			if !found || succeeded || reason != eb.Status.Reason {
				t.Errorf("%s: v1beta2 status.succeeded %v (present %v), Reason %q; want false, present, %q", c.name, succeeded, found, reason, eb.Status.Reason)
			}
		}
		if objs, err := b.store.List(ctx, "bk/x.db"); err != nil || len(objs) != 0 {
			t.Errorf("failed backups stored %v (list: %v)", objs, err)
		}
		// The operator is still working: a good backup after the bad ones succeeds, this
		// one naming its cluster by reference.
		good := b.newBackup("after-errors", cluster, "bk/after.db", "aws", nil)
		good.Spec.EtcdEndpoints = nil
		good.Spec.ClusterRef = &etcdv1beta2.EtcdClusterRef{Name: cluster}
		b.Create(good)
		b.waitCondition(t, "after-errors", metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 60*time.Second)
	})
}

// gathered is the value of the operator's gauge name whose label has value, from the
// manager's registry (the operator runs in the test process).
func gathered(t *testing.T, name, label, value string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Errorf("no %s{%s=%q} on the operator's registry", name, label, value)
	return 0
}
