//go:build integration

package etcdrestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
	"github.com/etcd-operator/etcd-operator/internal/test/poll"
)

// A restore whose endpoint drips its backup (above every per-read bound) does not hold a reconcile worker
// while the operator reads the object's SHA-256 itself: the reconcile returns at once
// saying the read runs, and another namespace's restore is verified meanwhile. Once the
// endpoint sends, the first restore is verified too.
func TestSlowDripHashLeavesTheWorker(t *testing.T) {
	srv := miniotest.Start(t)
	srv.MakeBucket(t, restoreBucket)
	creds, err := backup.ParseAWSSecret(map[string][]byte{"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())})
	if err != nil {
		t.Fatal(err)
	}
	store, err := backup.NewS3(backup.S3Config{Endpoint: srv.Endpoint(), Bucket: restoreBucket, ForcePathStyle: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// 16 MiB: under three minutes at the drip. What the check pods report is played
	// below; only the operator's own read matters here.
	data := make([]byte, 16<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	obj, err := store.Put(ctx, "c/one.db", bytes.NewReader(data), backup.PutOptions{Metadata: map[string]string{"etcd-version": "3.6.16"}})
	if err != nil {
		t.Fatal(err)
	}
	tarpit := fixture.StartDripS3(t, srv.Endpoint())

	var objs []client.Object
	for _, ns := range []string{"team-a", "team-b"} {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns}, Data: map[string][]byte{
			"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})
	}
	slow := fixture.S3Restore("slow", "slow", restoreBucket+"/"+obj.Key)
	slow.Namespace, slow.Spec.S3.Endpoint = "team-a", tarpit.URL
	fast := fixture.S3Restore("fast", "fast", restoreBucket+"/"+obj.Key)
	fast.Namespace, fast.Spec.S3.Endpoint = "team-b", srv.Endpoint()
	f := newRestoreFixture(t, append(objs, slow, fast)...)
	f.r.Hasher = &snapshotcheck.Hasher{} // as in production: the read runs apart

	// reconcile returns the restore's condition after one reconcile, failing the test if
	// the reconcile does not return (a worker held by the endpoint).
	reconcile := func(er *etcdv1beta2.EtcdRestore) *metav1.Condition {
		t.Helper()
		return f.reconcileWithin(t, er, time.Minute)
	}
	verified := func(er *etcdv1beta2.EtcdRestore) bool {
		var got etcdv1beta2.EtcdRestore
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(er), &got); err != nil {
			t.Fatal(err)
		}
		return recordedObject(&got, restoreBucket, er.Spec.S3.Endpoint) != nil
	}

	// Both check pods report a passed check of the object (as the kubelet would).
	reconcile(slow)
	reconcile(fast)
	var pods corev1.PodList
	if err := f.c.List(ctx, &pods, client.HasLabels{render.LabelSnapshotCheck}); err != nil || len(pods.Items) != 2 {
		t.Fatalf("check pods %d (%v), want 2", len(pods.Items), err)
	}
	report := restore.CheckResult{Key: obj.Key, SHA256: obj.SHA256, Revision: 7}
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.SnapshotCheckContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: string(report.Encode())}}}}
		if err := f.c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	c := reconcile(slow)
	if c == nil || c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, "reads the object's SHA-256 itself") {
		t.Fatalf("slow: condition %+v, want Unknown saying the operator reads the object apart", c)
	}
	poll.Eventually(t, time.Minute, 20*time.Millisecond, "the operator's read of the slow object at the tarpit", func() error {
		if tarpit.Drips() == 0 {
			return fmt.Errorf("no read dripping yet")
		}
		return nil
	})
	// Another namespace's restore is verified while team-a's read still drips.
	poll.Eventually(t, time.Minute, 50*time.Millisecond, "team-b's restore verified", func() error {
		reconcile(fast)
		if !verified(fast) {
			return fmt.Errorf("not verified yet")
		}
		return nil
	})
	if tarpit.Drips() == 0 || verified(slow) {
		t.Fatal("team-a's read finished before team-b's restore was verified; the test shows nothing")
	}
	if c := reconcile(slow); c == nil || c.Status != metav1.ConditionUnknown {
		t.Fatalf("slow: condition %+v while its read drips", c)
	}

	tarpit.Release()
	poll.Eventually(t, time.Minute, 50*time.Millisecond, "team-a's restore verified once its endpoint sends", func() error {
		reconcile(slow)
		if !verified(slow) {
			return fmt.Errorf("not verified yet")
		}
		return nil
	})
}

// Finding a restore's object (whether spec.s3.path exists, the newest periodic backup,
// a backupRef's selection) at an endpoint that never answers holds no reconcile worker:
// each reconcile returns at once saying the lookup runs apart, another namespace's
// restore goes on to its check meanwhile, and the lookup's overall deadline ends in
// reason Timeout. A deleted restore's lookup results are forgotten.
func TestBackupLookupLeavesTheWorker(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	ctx := context.Background()
	obj, err := store.Put(ctx, "c/one.db", bytes.NewReader([]byte("a snapshot")), backup.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hanging, dialled := fixture.SilentS3(t)

	var objs []client.Object
	for _, ns := range []string{"team-a", "team-b"} {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns}, Data: map[string][]byte{
			"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}})
	}
	slow := fixture.S3Restore("slow", "slow", restoreBucket+"/c/per")
	slow.Namespace, slow.Spec.S3.Endpoint = "team-a", hanging
	eb := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team-a", UID: "uid-nightly"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "c"},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: restoreBucket + "/c/per", AWSSecret: "aws",
				Endpoint: hanging, ForcePathStyle: true}}},
	}
	ref := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "ref", Namespace: "team-a", UID: "uid-ref",
			Annotations: map[string]string{etcdv1beta2.RestoreBackupRefAnnotation: "nightly"}},
		Spec: etcdv1beta2.EtcdRestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "ref"}, BackupStorageType: etcdv1beta2.BackupStorageTypeS3},
	}
	fast := fixture.S3Restore("fast", "fast", restoreBucket+"/"+obj.Key)
	fast.Namespace, fast.Spec.S3.Endpoint = "team-b", srv.Endpoint()
	f := newRestoreFixture(t, append(objs, eb, slow, ref, fast)...)
	f.r.lookups = lookups{timeout: 3 * time.Second} // as in production: nobody waits for the lookup

	// reconcile returns the restore's condition after one reconcile, failing the test if
	// the reconcile does not return well within the endpoint's per-request limit (30s).
	reconcile := func(er *etcdv1beta2.EtcdRestore) *metav1.Condition {
		t.Helper()
		return f.reconcileWithin(t, er, 15*time.Second)
	}
	for _, er := range []*etcdv1beta2.EtcdRestore{slow, ref} {
		if c := reconcile(er); c == nil || c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, "looking for backup") {
			t.Fatalf("%s: condition %+v, want Unknown saying the lookup runs apart", er.Name, c)
		}
	}
	poll.Eventually(t, time.Minute, 20*time.Millisecond, "the hanging endpoint dialled by both lookups", func() error {
		if n := dialled(); n < 2 {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
	// Another namespace's restore finds its object and starts its check meanwhile.
	poll.Eventually(t, time.Minute, 50*time.Millisecond, "team-b's check pod", func() error {
		reconcile(fast)
		var pods corev1.PodList
		if err := f.c.List(ctx, &pods, client.InNamespace("team-b"), client.HasLabels{render.LabelSnapshotCheck}); err != nil || len(pods.Items) != 1 {
			return fmt.Errorf("check pods %d (%v)", len(pods.Items), err)
		}
		return nil
	})
	// Past the lookup's deadline: reason Timeout, saying so.
	for _, er := range []*etcdv1beta2.EtcdRestore{slow, ref} {
		poll.Eventually(t, time.Minute, 100*time.Millisecond, er.Name+"'s Timeout", func() error {
			c := reconcile(er)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonTimeout || !strings.Contains(c.Message, "took longer than 3s") {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
	}

	// The found object of team-b's restore is kept for it, and forgotten once it is deleted.
	var got etcdv1beta2.EtcdRestore
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(fast), &got); err != nil {
		t.Fatal(err)
	}
	id := lookupID(&got, got.Spec.S3)
	if r, _, ok := f.r.lookups.queue().Result(id); !ok || r.key != obj.Key {
		t.Fatalf("team-b's lookup result %+v %v, want %s kept", r, ok, obj.Key)
	}
	if err := f.c.Delete(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fast)}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.r.lookups.queue().Result(id); ok {
		t.Error("a deleted restore's lookup result is kept")
	}
}

// reconcileWithin reconciles er once and returns its Succeeded condition, failing the
// test if the reconcile has not returned within limit (a worker held by the endpoint).
func (f *restoreFixture) reconcileWithin(t *testing.T, er *etcdv1beta2.EtcdRestore, limit time.Duration) *metav1.Condition {
	t.Helper()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(er)})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reconcile %s: %v", er.Name, err)
		}
	case <-time.After(limit):
		t.Fatalf("reconcile of %s/%s still running: the endpoint holds the worker", er.Namespace, er.Name)
	}
	var got etcdv1beta2.EtcdRestore
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(er), &got); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.RestoreConditionSucceeded)
}
