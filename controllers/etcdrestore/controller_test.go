//go:build integration

package etcdrestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/pinsign"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
	"github.com/etcd-operator/etcd-operator/internal/test/miniotest"
)

const restoreBucket = "backups"

// TestRestoreCreatesCluster runs against a real MinIO: exact keys, periodic prefixes,
// missing backups, the spec annotation, and completion when the cluster is Available.
func TestRestoreCreatesCluster(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	ctx := context.Background()
	snap := etcdtest.Snapshot(t, 5)
	put := func(key, version string) backup.Object {
		t.Helper()
		obj, err := store.Put(ctx, key, bytes.NewReader(snap), backup.PutOptions{Metadata: map[string]string{"etcd-version": version}})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	exact := put("c/one.db", "3.7.3")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	put(backup.PeriodicKey("c/per", 10, t0), "3.6.16")
	newest := put(backup.PeriodicKey("c/per", 20, t0.Add(time.Minute)), "3.6.16")
	put(backup.PeriodicKey("c/per", 15, t0.Add(-time.Minute)), "3.6.16")

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	mk := func(name, cluster, path string) *etcdv1beta2.EtcdRestore {
		er := fixture.S3Restore(name, cluster, restoreBucket+"/"+path)
		er.Spec.S3.Endpoint = srv.Endpoint()
		return er
	}
	withSpec := mk("sized", "sized", "c/one.db")
	withSpec.Annotations = map[string]string{RestoreClusterSpecAnnotation: `{"size": 1, "repository": "registry.example/etcd"}`}
	// A corrupted object: its bytes no longer match the checksum stored with it.
	data := "snapshot bytes, later damaged"
	if _, err := srv.Client(t).PutObject(ctx, restoreBucket, "c/corrupt.db", strings.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{UserMetadata: map[string]string{"sha256": strings.Repeat("0", 64)}}); err != nil {
		t.Fatal(err)
	}
	f := newRestoreFixture(t, secret, mk("exact", "from-exact", "c/one.db"), mk("latest", "from-latest", "c/per"),
		mk("missing", "from-missing", "c/nothing"), withSpec, mk("corrupt", "from-corrupt", "c/corrupt.db"))

	get := func(name string) *etcdv1beta2.EtcdCluster {
		t.Helper()
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
		return &c
	}
	check := func(restore, cluster, wantPath, wantSHA, wantVersion string, wantSize int) {
		t.Helper()
		f.reconcile(t, restore)
		f.wantCondition(t, restore, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting for it to become Available")
		c := get(cluster)
		src, err := render.Restore(c)
		if err != nil || src == nil {
			t.Fatalf("%s: restore annotation: %+v, %v", cluster, src, err)
		}
		if src.S3.Path != wantPath || src.SHA256 != wantSHA || len(wantSHA) != 64 ||
			src.Restore != restore || src.UID != string(f.restore(t, restore).UID) || src.S3.Endpoint != srv.Endpoint() || !src.S3.ForcePathStyle {
			t.Errorf("%s: restore source %+v; want path %s sha %s", cluster, src, wantPath, wantSHA)
		}
		if c.Spec.Version != wantVersion || c.Spec.Size != wantSize {
			t.Errorf("%s: spec %+v, want size %d version %s", cluster, c.Spec, wantSize, wantVersion)
		}
		if len(c.OwnerReferences) != 0 {
			t.Errorf("%s: owner references %v: deleting the restore would delete the cluster", cluster, c.OwnerReferences)
		}
		if reqs := restoreOfCluster(ctx, c); len(reqs) != 1 || reqs[0].Name != restore {
			t.Errorf("%s maps to %v", cluster, reqs)
		}
	}
	check("exact", "from-exact", restoreBucket+"/c/one.db", exact.SHA256, "3.7.3", DefaultRestoreSize)
	check("latest", "from-latest", restoreBucket+"/"+newest.Key, newest.SHA256, "3.6.16", DefaultRestoreSize)
	check("sized", "sized", restoreBucket+"/c/one.db", exact.SHA256, "3.7.3", 1)
	if get("sized").Spec.Repository != "registry.example/etcd" {
		t.Errorf("spec annotation's repository not used")
	}

	// A missing backup is reported and retried (it may be being uploaded); no cluster.
	if res := f.reconcile(t, "missing"); res.RequeueAfter == 0 {
		t.Errorf("missing backup not retried")
	}
	f.wantCondition(t, "missing", metav1.ConditionFalse, etcdv1beta2.ReasonBackupNotFound, "c/nothing")
	// A corrupted backup is found before anything is created.
	f.reconcile(t, "corrupt")
	f.wantCondition(t, "corrupt", metav1.ConditionFalse, etcdv1beta2.ReasonChecksumMismatch, "c/corrupt.db")
	if len(f.clusters(t)) != 3 {
		t.Errorf("clusters: %d, want 3", len(f.clusters(t)))
	}

	// Reconciling again (e.g. after an operator restart) follows the same cluster.
	rv := get("from-exact").ResourceVersion
	f.reconcile(t, "exact")
	if get("from-exact").ResourceVersion != rv {
		t.Errorf("the restore changed its own cluster on a second pass")
	}
	// A member whose restore init container failed is reported, and the report clears
	// once the member recovers.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "from-exact-abc", Namespace: "default", Labels: render.MemberLabels("from-exact", "from-exact-abc")},
		Spec:       corev1.PodSpec{InitContainers: []corev1.Container{{Name: render.RestoreContainerName, Image: "op:test"}}, Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}},
	}
	if err := f.c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if reqs := f.r.restoreOfPod(ctx, pod); len(reqs) != 1 || reqs[0].Name != "exact" {
		t.Errorf("pod maps to %v", reqs)
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: render.RestoreContainerName,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "line 1\n{\"msg\":\"restore failed\",\"error\":\"access denied\"}\n"}}}}
	if err := f.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "exact")
	f.wantCondition(t, "exact", metav1.ConditionFalse, etcdv1beta2.ReasonRestoreStepFailed, `member from-exact-abc failed (exit code 1); see kubectl logs from-exact-abc -c restore: {"msg":"restore failed","error":"access denied"}`)
	pod.Status.InitContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	if err := f.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "exact")
	f.wantCondition(t, "exact", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "waiting")

	// Available completes the restore.
	c := get("from-exact")
	c.Status.Conditions = []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue}}
	if err := f.c.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "exact")
	f.wantCondition(t, "exact", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, "is Available")
}

// TestRestoreReplacesCluster: with the opt-in annotation an existing cluster is deleted
// (after the backup is verified against a real MinIO), the deletion is recorded, and the
// new cluster is created only once the old one and its pods are gone. A corrupted backup
// or a PVC backup deletes nothing.
func TestRestoreReplacesCluster(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	ctx := context.Background()
	good, err := store.Put(ctx, "c/good.db", bytes.NewReader(etcdtest.Snapshot(t, 5)), backup.PutOptions{Metadata: map[string]string{"etcd-version": "3.6.16"}})
	if err != nil {
		t.Fatal(err)
	}
	data := "snapshot bytes, later damaged"
	if _, err := srv.Client(t).PutObject(ctx, restoreBucket, "c/corrupt.db", strings.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{UserMetadata: map[string]string{"sha256": strings.Repeat("0", 64)}}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	replacing := func(er *etcdv1beta2.EtcdRestore) *etcdv1beta2.EtcdRestore {
		if er.Spec.S3 != nil {
			er.Spec.S3.Endpoint = srv.Endpoint()
		}
		er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
		return er
	}
	// A finalizer holds "prod" in deletion the way foreground propagation does until
	// its dependents are gone.
	prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-old-prod", Finalizers: []string{"test/hold"}}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 5}}
	keep := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "default", UID: "uid-keep"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	oldPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "prod-old", Namespace: "default", Labels: render.MemberLabels("prod", "prod-old")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
	corrupt := replacing(fixture.S3Restore("corrupt", "keep", restoreBucket+"/c/corrupt.db"))
	pvc := replacing(fixture.PVCRestore("pvc", "keep", "backups", "k.db"))
	later := fixture.S3Restore("later", "keep", restoreBucket+"/c/good.db")
	later.Spec.S3.Endpoint = srv.Endpoint()
	f := newRestoreFixture(t, secret, prod, keep, oldPod, corrupt, pvc, later, replacing(fixture.S3Restore("replace", "prod", restoreBucket+"/c/good.db")))
	get := func(name string) (*etcdv1beta2.EtcdCluster, error) {
		var c etcdv1beta2.EtcdCluster
		return &c, f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &c)
	}
	keepBefore, _ := get("keep")

	// Nothing is deleted for a backup that fails verification, nor for a PVC backup.
	f.reconcile(t, "corrupt")
	f.wantCondition(t, "corrupt", metav1.ConditionFalse, etcdv1beta2.ReasonChecksumMismatch, "c/corrupt.db")
	f.reconcile(t, "pvc")
	f.wantCondition(t, "pvc", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "nothing was changed")
	for _, name := range []string{"corrupt", "pvc"} {
		if _, ok := f.restore(t, name).Annotations[ReplacedClusterAnnotation]; ok {
			t.Errorf("%s recorded a replacement", name)
		}
	}
	if c, err := get("keep"); err != nil || c.UID != keepBefore.UID || c.ResourceVersion != keepBefore.ResourceVersion || !c.DeletionTimestamp.IsZero() {
		t.Fatalf("cluster keep touched: %+v, %v", c, err)
	}

	// Without the annotation: refused; adding the annotation later resumes the restore.
	f.reconcile(t, "later")
	f.wantCondition(t, "later", metav1.ConditionFalse, etcdv1beta2.ReasonClusterExists, ReplaceExistingClusterAnnotation)
	f.reconcile(t, "later")
	if c, err := get("keep"); err != nil || c.ResourceVersion != keepBefore.ResourceVersion {
		t.Fatalf("cluster keep touched without the annotation: %v", err)
	}

	// With the annotation: recorded, deleted, waited for.
	for range 2 { // the second pass sees the cluster in deletion and deletes nothing more
		if res := f.reconcile(t, "replace"); res.RequeueAfter == 0 {
			t.Errorf("replacement not polled: %+v", res)
		}
	}
	er := f.wantCondition(t, "replace", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "EtcdCluster prod (uid uid-old-prod) is being deleted")
	if got := er.Annotations[ReplacedClusterAnnotation]; got != `{"name":"prod","uid":"uid-old-prod"}` {
		t.Errorf("replaced-cluster record %q", got)
	}
	old, err := get("prod")
	if err != nil || old.DeletionTimestamp.IsZero() || old.UID != "uid-old-prod" {
		t.Fatalf("old cluster not being deleted: %+v, %v", old, err)
	}
	foundEvent := false
	for len(f.rec.Events) > 0 {
		ev := <-f.rec.Events
		if strings.Contains(ev, "DeletedCluster") {
			foundEvent = true
			if !strings.Contains(ev, "prod (uid uid-old-prod") || !strings.Contains(ev, good.SHA256) {
				t.Errorf("event %q", ev)
			}
		}
	}
	if !foundEvent {
		t.Errorf("no DeletedCluster event")
	}
	// The old cluster goes; its pod is still terminating: no new cluster yet.
	old.Finalizers = nil
	if err := f.c.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := get("prod"); err == nil {
		t.Fatalf("old cluster still there")
	}
	f.reconcile(t, "replace")
	f.wantCondition(t, "replace", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "waiting for 1 pod(s)")
	if _, err := get("prod"); err == nil {
		t.Fatalf("new cluster created while an old pod exists")
	}
	if err := f.c.Delete(ctx, oldPod); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "replace")
	f.wantCondition(t, "replace", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "deleted the earlier EtcdCluster prod (uid uid-old-prod)")
	c, err := get("prod")
	if err != nil {
		t.Fatal(err)
	}
	src, err := render.Restore(c)
	if err != nil || src == nil || src.Restore != "replace" || src.SHA256 != good.SHA256 || c.Spec.Size != DefaultRestoreSize {
		t.Fatalf("new cluster: %+v %+v, %v", src, c.Spec, err)
	}
	// The new cluster is the restore's own: later passes follow it and delete nothing.
	rv := c.ResourceVersion
	f.reconcile(t, "replace")
	if c, err := get("prod"); err != nil || c.ResourceVersion != rv || !c.DeletionTimestamp.IsZero() {
		t.Fatalf("the restore touched its own cluster: %v", err)
	}
	c.Status.Conditions = []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionAvailable, Status: corev1.ConditionTrue}}
	if err := f.c.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "replace")
	f.wantCondition(t, "replace", metav1.ConditionTrue, etcdv1beta2.ReasonRestoreComplete, "deleted the earlier EtcdCluster prod (uid uid-old-prod)")

	// The refused restore resumes once annotated, and replaces "keep".
	later = f.restore(t, "later")
	later.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
	if err := f.c.Update(ctx, later); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "later")
	f.wantCondition(t, "later", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "deleting EtcdCluster keep (uid uid-keep")
	if _, err := get("keep"); err == nil {
		t.Errorf("keep not deleted")
	}
}

// TestRestoreReplaceChecksSnapshot: before replace-existing-cluster deletes anything,
// the backup is downloaded and checked as the restore step will check it. Objects
// uploaded as CoreOS's operator did (no checksum of ours) are judged by etcd's integrity
// hash and bbolt alone: garbage and a truncated snapshot delete nothing, a valid one
// replaces the cluster.
func TestRestoreReplaceChecksSnapshot(t *testing.T) {
	srv := miniotest.Start(t)
	srv.MakeBucket(t, restoreBucket)
	ctx := context.Background()
	snap := etcdtest.Snapshot(t, 5)
	garbage := make([]byte, len(snap))
	if _, err := rand.Read(garbage); err != nil {
		t.Fatal(err)
	}
	for key, b := range map[string][]byte{
		"coreos/garbage.db":   garbage,
		"coreos/truncated.db": snap[:len(snap)-4096],
		"coreos/good.db":      snap,
	} {
		if _, err := srv.Client(t).PutObject(ctx, restoreBucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	mk := func(name, cluster, key string, replace bool) *etcdv1beta2.EtcdRestore {
		er := fixture.S3Restore(name, cluster, restoreBucket+"/"+key)
		er.Spec.S3.Endpoint = srv.Endpoint()
		if replace {
			er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
		}
		return er
	}
	keep := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "default", UID: "uid-keep"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-prod"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	f := newRestoreFixture(t, secret, keep, prod,
		mk("garbage", "keep", "coreos/garbage.db", true), mk("truncated", "keep", "coreos/truncated.db", true),
		mk("garbage-new", "new", "coreos/garbage.db", false), mk("good", "prod", "coreos/good.db", true))

	keepBefore := &etcdv1beta2.EtcdCluster{}
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(keep), keepBefore); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"garbage", "truncated"} {
		f.reconcile(t, name)
		f.wantCondition(t, name, metav1.ConditionFalse, etcdv1beta2.ReasonInvalidSnapshot, "EtcdCluster keep (uid uid-keep) was not touched")
		if _, ok := f.restore(t, name).Annotations[ReplacedClusterAnnotation]; ok {
			t.Errorf("%s recorded a replacement", name)
		}
	}
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(keep), &c); err != nil || c.ResourceVersion != keepBefore.ResourceVersion || !c.DeletionTimestamp.IsZero() {
		t.Fatalf("cluster keep touched: %+v, %v", c, err)
	}
	// Not only for replacements: a new cluster is never created from such an object.
	f.reconcile(t, "garbage-new")
	f.wantCondition(t, "garbage-new", metav1.ConditionFalse, etcdv1beta2.ReasonInvalidSnapshot, "not a restorable etcd snapshot")
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "new"}, &c); err == nil {
		t.Errorf("a cluster was created from garbage")
	}
	events := ""
	for len(f.rec.Events) > 0 {
		events += <-f.rec.Events + "\n"
	}
	if !strings.Contains(events, etcdv1beta2.ReasonInvalidSnapshot) {
		t.Errorf("no %s event: %s", etcdv1beta2.ReasonInvalidSnapshot, events)
	}

	// A valid CoreOS-era snapshot (no checksum of ours) does replace.
	f.reconcile(t, "good")
	f.wantCondition(t, "good", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "deleting EtcdCluster prod (uid uid-prod")
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &c); err == nil {
		t.Errorf("prod not deleted")
	}
	f.reconcile(t, "good")
	// Pinned to the bytes verified: the members restore exactly what was checked here.
	read := fmt.Sprintf("%x", sha256.Sum256(snap))
	f.wantCondition(t, "good", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "sha256 "+read)
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &c); err != nil {
		t.Fatal(err)
	}
	if src, err := render.Restore(&c); err != nil || src == nil || src.S3.Path != restoreBucket+"/coreos/good.db" || src.SHA256 != read {
		t.Errorf("new cluster's restore source %+v, %v", src, err)
	}
}

// TestRestoreReplacesAnAuthCluster: replacing a cluster with etcd auth on gives the new
// cluster the old one's auth annotations and keeps the operator's root Secret, whose
// password the backup's root user has: the restore becomes a second owner of it before
// the delete (so the garbage collector, played here, only drops the old cluster's
// reference), then hands it to the new cluster, unchanged. Kept is whatever Secret the
// old cluster owns, also the operator's when its name is written out.
func TestRestoreReplacesAnAuthCluster(t *testing.T) {
	on := map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	for _, tc := range []struct {
		name       string
		ann        map[string]string
		secret     string
		controller bool // the old cluster (then the new one) controls the Secret
	}{
		{"the operator's Secret", on, "prod-etcd-root", true},
		{"the operator's Secret named explicitly", withRoot(on, "prod-etcd-root"), "prod-etcd-root", true},
		{"a named Secret the cluster owns", withRoot(on, "mine"), "mine", false},
	} {
		t.Run(tc.name, func(t *testing.T) { replaceAuthCluster(t, tc.ann, tc.secret, tc.controller) })
	}
}

func withRoot(ann map[string]string, secret string) map[string]string {
	out := map[string]string{etcdv1beta2.AuthRootSecretAnnotation: secret}
	for k, v := range ann {
		out[k] = v
	}
	return out
}

func replaceAuthCluster(t *testing.T, ann map[string]string, secret string, controller bool) {
	srv, aws := goodBackupStore(t)
	ctx := context.Background()
	prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-old-prod",
		Finalizers:  []string{"test/hold"},
		Annotations: ann}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	yes := true
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: "prod", UID: "uid-old-prod", Controller: &controller, BlockOwnerDeletion: &yes}}},
		Data: map[string][]byte{etcdv1beta2.AuthPasswordKey: []byte("old-root-pw")}}
	er := fixture.S3Restore("rollback", "prod", restoreBucket+"/c/good.db")
	er.Spec.S3.Endpoint = srv.Endpoint()
	er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
	f := newRestoreFixture(t, aws, prod, root, er)
	getRoot := func() *corev1.Secret {
		var s corev1.Secret
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(root), &s); err != nil {
			t.Fatalf("root Secret: %v", err)
		}
		return &s
	}

	f.reconcile(t, "rollback")
	f.wantCondition(t, "rollback", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "deleting EtcdCluster prod")
	rc, ok := replacedRecord(f.restore(t, "rollback"))
	if !ok || rc.RootSecret != secret || rc.Auth[etcdv1beta2.AuthAnnotation] != etcdv1beta2.AuthEnabledValue {
		t.Fatalf("replaced-cluster record %+v", rc)
	}
	if fin := f.restore(t, "rollback").Finalizers; !slices.Contains(fin, RootSecretFinalizer) {
		t.Fatalf("restore finalizers %v while it holds the root Secret", fin)
	}
	s := getRoot()
	if !ownedBy(s, f.restore(t, "rollback").UID) || !ownedBy(s, prod.UID) || metav1.IsControlledBy(s, prod) != controller {
		t.Fatalf("root Secret owners %+v: want the old cluster's and the restore's", s.OwnerReferences)
	}

	// The old cluster goes; the garbage collector deletes what only it owned and drops
	// its reference from what has another owner.
	var old etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &old); err != nil {
		t.Fatal(err)
	}
	old.Finalizers = nil
	if err := f.c.Update(ctx, &old); err != nil {
		t.Fatal(err)
	}
	var secrets corev1.SecretList
	if err := f.c.List(ctx, &secrets); err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		var rest []metav1.OwnerReference
		for _, ref := range sec.OwnerReferences {
			if ref.UID != "uid-old-prod" {
				rest = append(rest, ref)
			}
		}
		switch {
		case len(rest) == len(sec.OwnerReferences):
		case len(rest) == 0:
			if err := f.c.Delete(ctx, sec); err != nil {
				t.Fatal(err)
			}
		default:
			sec.OwnerReferences = rest
			if err := f.c.Update(ctx, sec); err != nil {
				t.Fatal(err)
			}
		}
	}

	f.reconcile(t, "rollback")
	f.wantCondition(t, "rollback", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "deleted the earlier EtcdCluster prod")
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &c); err != nil {
		t.Fatal(err)
	}
	if on, got := etcdv1beta2.AuthOf(&c); !on || got != secret {
		t.Errorf("new cluster: auth %v with Secret %q, want on with %s", on, got, secret)
	}
	s = getRoot()
	if !ownedBy(s, c.UID) || metav1.IsControlledBy(s, &c) != controller || len(s.OwnerReferences) != 1 || string(s.Data[etcdv1beta2.AuthPasswordKey]) != "old-root-pw" {
		t.Errorf("root Secret after the restore: owners %+v, password kept %v", s.OwnerReferences, string(s.Data[etcdv1beta2.AuthPasswordKey]) == "old-root-pw")
	}
	if fin := f.restore(t, "rollback").Finalizers; len(fin) != 0 {
		t.Errorf("restore finalizers %v after the hand-over", fin)
	}
}

// The auth a replaced cluster carries: on by its annotation or by its AuthEnabled
// condition, with the Secret it names; nothing without auth.
func TestAuthCarried(t *testing.T) {
	on := map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}
	named := map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue, etcdv1beta2.AuthRootSecretAnnotation: "mine"}
	for _, tc := range []struct {
		name string
		c    etcdv1beta2.EtcdCluster
		want map[string]string
	}{
		{"no auth", etcdv1beta2.EtcdCluster{}, nil},
		{"annotation", etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Annotations: on}}, on},
		{"named Secret", etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Annotations: named}}, named},
		{"on, annotation dropped", etcdv1beta2.EtcdCluster{Status: etcdv1beta2.EtcdClusterStatus{Conditions: []etcdv1beta2.ClusterCondition{
			{Type: etcdv1beta2.ClusterConditionAuthEnabled, Status: corev1.ConditionTrue}}}}, on},
	} {
		if got := authCarried(&tc.c); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A replaced-cluster record on an EtcdRestore is anyone's to write: a record naming auth
// and a Secret gives the cluster auth only when the operator signed it for that restore.
// One whose signature does not verify fails the restore (InvalidSpec, naming the
// signature) before anything is created: a cluster without the auth its restored data
// has on would lock the operator out without a word.
func TestForgedReplacedRecordCarriesNoAuth(t *testing.T) {
	srv, aws := goodBackupStore(t)
	ctx := context.Background()
	rec := `{"name":"new","uid":"made-up","auth":{"etcd.database.coreos.com/auth":"enabled","etcd.database.coreos.com/auth-root-secret":"victim-etcd-root"}}`
	for _, tc := range []struct {
		name, sig string
		wantAuth  bool
	}{
		{"unsigned", "", false},
		{"signed for another restore", pinsign.SignReplaced(testPinKey, "another-restore", rec), false},
		{"signed by another key", pinsign.SignReplaced([]byte("a key the operator does not have!"), "uid-forged", rec), false},
		{"signed by the operator for this restore", pinsign.SignReplaced(testPinKey, "uid-forged", rec), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := forgedRecordFixture(t, srv.Endpoint(), aws, rec, tc.sig)
			f.reconcile(t, "forged")
			var c etcdv1beta2.EtcdCluster
			err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "new"}, &c)
			if !tc.wantAuth {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("cluster created (auth annotations %v) from a record whose signature does not verify: %v", c.Annotations, err)
				}
				f.wantCondition(t, "forged", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "signature")
				return
			}
			if err != nil {
				t.Fatalf("cluster not created: %v", err)
			}
			on, secret := etcdv1beta2.AuthOf(&c)
			if on != tc.wantAuth || (on && secret != "victim-etcd-root") {
				t.Errorf("new cluster auth %v with Secret %q, want auth %v", on, secret, tc.wantAuth)
			}
		})
	}
}

// A replaced-cluster record's shard key (label and annotation) is carried only when the
// operator signed the record for this restore: the operator creates the cluster with an
// identity a shard guard lets through, so an unsigned record (a tenant's own annotation
// on its EtcdRestore) would otherwise pick the cluster's shard for it. The rest of the
// record's metadata, which the tenant could set on a cluster itself, is carried either way.
func TestForgedReplacedRecordCarriesNoShard(t *testing.T) {
	const shardKey = "example.com/shard"
	srv, aws := goodBackupStore(t)
	ctx := context.Background()
	rec := `{"name":"new","uid":"made-up","meta":{"labels":{"example.com/shard":"loose","team":"x"},"annotations":{"example.com/shard":"loose"}}}`
	for _, tc := range []struct {
		name, sig string
		wantShard string
	}{
		{"unsigned", "", ""},
		{"signed for another restore", pinsign.SignReplaced(testPinKey, "another-restore", rec), ""},
		{"signed by the operator for this restore", pinsign.SignReplaced(testPinKey, "uid-forged", rec), "loose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := forgedRecordFixture(t, srv.Endpoint(), aws, rec, tc.sig)
			f.r.ShardKey = shardKey
			f.reconcile(t, "forged")
			var c etcdv1beta2.EtcdCluster
			if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "new"}, &c); err != nil {
				t.Fatalf("cluster not created: %v", err)
			}
			if c.Labels[shardKey] != tc.wantShard || c.Annotations[shardKey] != tc.wantShard {
				t.Errorf("new cluster's shard label %q, annotation %q; want %q", c.Labels[shardKey], c.Annotations[shardKey], tc.wantShard)
			}
			if c.Labels["team"] != "x" {
				t.Errorf("new cluster's labels %v: the record's other labels are carried either way", c.Labels)
			}
		})
	}
}

// forgedRecordFixture is a restore "forged" (uid-forged) of c/good.db into a new
// cluster "new", carrying the replaced-cluster record rec with signature sig.
func forgedRecordFixture(t *testing.T, endpoint string, aws *corev1.Secret, rec, sig string) *restoreFixture {
	t.Helper()
	er := fixture.S3Restore("forged", "new", restoreBucket+"/c/good.db")
	er.UID = "uid-forged"
	er.Spec.S3.Endpoint = endpoint
	er.Annotations = map[string]string{ReplacedClusterAnnotation: rec, ReplacedClusterSignatureAnnotation: sig}
	return newRestoreFixture(t, aws.DeepCopy(), er)
}

// The carried auth is checked before the old cluster is deleted: a replaced cluster
// whose auth annotations the new one could not be created with (stored before admission
// checked them) is left in place, and so is an auth cluster when the operator has no key
// to sign the record the new cluster's auth is taken from.
func TestReplaceRefusedBeforeDeleteForAuth(t *testing.T) {
	srv, aws := goodBackupStore(t)
	ctx := context.Background()
	authOn := []etcdv1beta2.ClusterCondition{{Type: etcdv1beta2.ClusterConditionAuthEnabled, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		noKey   bool
		mention string
	}{
		{"root Secret annotation no Secret name", map[string]string{etcdv1beta2.AuthAnnotation: "yes", etcdv1beta2.AuthRootSecretAnnotation: "Bad_Name"}, false, etcdv1beta2.AuthRootSecretAnnotation},
		{"no signing key", map[string]string{etcdv1beta2.AuthAnnotation: etcdv1beta2.AuthEnabledValue}, true, "no signing key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-old-prod", Annotations: tc.ann},
				Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}, Status: etcdv1beta2.EtcdClusterStatus{Conditions: authOn}}
			er := fixture.S3Restore("rollback", "prod", restoreBucket+"/c/good.db")
			er.Spec.S3.Endpoint = srv.Endpoint()
			er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
			f := newRestoreFixture(t, aws.DeepCopy(), prod, er)
			if tc.noKey {
				f.r.PinKey = nil
			}
			f.reconcile(t, "rollback")
			f.wantCondition(t, "rollback", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, tc.mention)
			var old etcdv1beta2.EtcdCluster
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &old); err != nil || !old.DeletionTimestamp.IsZero() {
				t.Fatalf("the old cluster was deleted (err %v, deletion %v)", err, old.DeletionTimestamp)
			}
		})
	}
}

// The API server judges the new cluster before the old one is deleted: one an admission
// policy would refuse (here a shard guard that does not exempt the operator, played by
// the client refusing the create as the API server does, with 403 Forbidden) leaves the
// old cluster in place and the restore failed with the API server's word.
func TestReplaceRefusedBeforeDeleteByAdmission(t *testing.T) {
	srv, aws := goodBackupStore(t)
	ctx := context.Background()
	prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-old-prod",
		Labels: map[string]string{"etcd.database.coreos.com/shard": "b"}}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	er := fixture.S3Restore("rollback", "prod", restoreBucket+"/c/good.db")
	er.Spec.S3.Endpoint = srv.Endpoint()
	er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
	f := newRestoreFixture(t, aws, prod, er)
	refused := 0
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*etcdv1beta2.EtcdCluster); ok {
			refused++
			return apierrors.NewForbidden(schema.GroupResource{Group: "etcd.database.coreos.com", Resource: "etcdclusters"}, obj.GetName(),
				errors.New("ValidatingAdmissionPolicy 'etcdcluster-shard-guard' denied request: metadata.labels[etcd.database.coreos.com/shard]: only the fleet's administrators set, change or remove it"))
		}
		return c.Create(ctx, obj, opts...)
	}})
	f.reconcile(t, "rollback")
	if refused == 0 {
		t.Fatal("no EtcdCluster create was asked of the API server before the delete")
	}
	f.wantCondition(t, "rollback", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "only the fleet's administrators")
	f.wantCondition(t, "rollback", metav1.ConditionFalse, etcdv1beta2.ReasonBackupInvalidSpec, "was not touched")
	var old etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &old); err != nil || !old.DeletionTimestamp.IsZero() || old.UID != prod.UID {
		t.Fatalf("the old cluster was deleted (err %v, deletion %v)", err, old.DeletionTimestamp)
	}
}

// Between the old cluster's deletion and the new one's creation the restore is the only
// owner of the kept root Secret (and has a finalizer). A restore that then fails for
// good, or is deleted, lets go of it (the Secret stays, owned by nothing of the restore
// or the replaced cluster; the condition or an event says so) instead of taking the
// password of the restored data with it; then the finalizer goes.
func TestRootSecretReleasedOnTerminalFailure(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		otherOwner bool
		deleted    bool
		oldAlive   bool // the old cluster's delete failed: it still runs and controls the Secret
	}{
		{"failed, the restore the only owner", false, false, false},
		{"failed, another owner too", true, false, false},
		{"restore deleted", false, true, false},
		{"failed, the old cluster still alive", false, false, true},
		{"restore deleted, the old cluster still alive", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			er := fixture.S3Restore("rollback", "prod", restoreBucket+"/c/good.db")
			er.UID = "uid-rollback"
			if !tc.deleted {
				er.Spec.BackupStorageType = "Tape" // no retry fixes it
			}
			er.Finalizers = []string{RootSecretFinalizer}
			rec := `{"name":"prod","uid":"uid-old-prod","auth":{"etcd.database.coreos.com/auth":"enabled"},"rootSecret":"prod-etcd-root"}`
			er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true", ReplacedClusterAnnotation: rec,
				ReplacedClusterSignatureAnnotation: pinsign.SignReplaced(testPinKey, "uid-rollback", rec)}
			yes := true
			refs := []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: "rollback", UID: "uid-rollback", BlockOwnerDeletion: &yes}}
			if tc.otherOwner {
				refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "uid-keeper"})
			}
			objs := []client.Object{er}
			if tc.oldAlive {
				prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-old-prod"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
				refs = append(refs, metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: "prod", UID: "uid-old-prod", Controller: &yes, BlockOwnerDeletion: &yes})
				objs = append(objs, prod)
			}
			root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-etcd-root", Namespace: "default", OwnerReferences: refs},
				Data: map[string][]byte{etcdv1beta2.AuthPasswordKey: []byte("old-root-pw")}}
			f := newRestoreFixture(t, append([]client.Object{root}, objs...)...)
			if tc.deleted {
				if err := f.c.Delete(ctx, f.restore(t, "rollback")); err != nil {
					t.Fatal(err)
				}
			}
			f.reconcile(t, "rollback")
			var s corev1.Secret
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(root), &s); err != nil {
				t.Fatal(err)
			}
			if ownedBy(&s, "uid-rollback") || len(s.OwnerReferences) != map[bool]int{false: 0, true: 1}[tc.otherOwner || tc.oldAlive] || string(s.Data[etcdv1beta2.AuthPasswordKey]) != "old-root-pw" {
				t.Fatalf("root Secret owners %+v, password kept %v: want released by the restore, kept", s.OwnerReferences, string(s.Data[etcdv1beta2.AuthPasswordKey]) == "old-root-pw")
			}
			if ctl := metav1.GetControllerOf(&s); tc.oldAlive && (ctl == nil || ctl.UID != "uid-old-prod") {
				t.Fatalf("root Secret owners %+v: the live old cluster lost its controller reference", s.OwnerReferences)
			}
			if tc.deleted {
				var gone etcdv1beta2.EtcdRestore
				if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "rollback"}, &gone); !apierrors.IsNotFound(err) {
					t.Fatalf("deleted restore still there (finalizers %v): %v", gone.Finalizers, err)
				}
				return
			}
			if fin := f.restore(t, "rollback").Finalizers; len(fin) != 0 {
				t.Errorf("finalizers %v after the Secret was released", fin)
			}
			if tc.oldAlive {
				f.wantCondition(t, "rollback", metav1.ConditionFalse, etcdv1beta2.ReasonUnsupportedStorageType, "keeps its root Secret prod-etcd-root")
				return
			}
			f.wantCondition(t, "rollback", metav1.ConditionFalse, etcdv1beta2.ReasonUnsupportedStorageType, "prod-etcd-root of the replaced cluster")
			// Reconciled again (finished): nothing more happens, the note stays.
			f.reconcile(t, "rollback")
			f.wantCondition(t, "rollback", metav1.ConditionFalse, etcdv1beta2.ReasonUnsupportedStorageType, "not deleted with it")
		})
	}
}

// A root Secret the restore let go of when it failed for good (owner-less) is taken back
// for the cluster a retry of the restore creates, when the record the operator signed
// names it; one something else owns, or a record not signed, leaves it alone.
func TestHandOverRetakesAReleasedRootSecret(t *testing.T) {
	ctx := context.Background()
	rec := `{"name":"prod","uid":"uid-old-prod","auth":{"etcd.database.coreos.com/auth":"enabled"},"rootSecret":"prod-etcd-root"}`
	for _, tc := range []struct {
		name     string
		sig      string
		owners   []metav1.OwnerReference
		wantTake bool
	}{
		{"released, signed record", pinsign.SignReplaced(testPinKey, "uid-rollback", rec), nil, true},
		{"released, record not signed", "", nil, false},
		{"owned by something else", pinsign.SignReplaced(testPinKey, "uid-rollback", rec), []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "uid-keeper"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			er := fixture.S3Restore("rollback", "prod", restoreBucket+"/c/good.db")
			er.UID = "uid-rollback"
			er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true", ReplacedClusterAnnotation: rec, ReplacedClusterSignatureAnnotation: tc.sig}
			root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-etcd-root", Namespace: "default", OwnerReferences: tc.owners},
				Data: map[string][]byte{etcdv1beta2.AuthPasswordKey: []byte("old-root-pw")}}
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-new-prod"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
			f := newRestoreFixture(t, root, er, c)
			if err := f.r.handOverRootSecret(ctx, f.restore(t, "rollback"), c); err != nil {
				t.Fatal(err)
			}
			var s corev1.Secret
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(root), &s); err != nil {
				t.Fatal(err)
			}
			if taken := metav1.IsControlledBy(&s, c); taken != tc.wantTake || len(s.OwnerReferences) != max(len(tc.owners), map[bool]int{true: 1}[tc.wantTake]) {
				t.Fatalf("root Secret owners %+v: taken by the new cluster %v, want %v", s.OwnerReferences, taken, tc.wantTake)
			}
		})
	}
}

// TestRestoreReplacementKeepsShardAndLabels: the cluster a restore creates in place of
// one it replaced keeps the old one's labels and the annotations that choose its
// operator instance (the shard key's, CoreOS's scope), so a cluster of shard b is not
// moved to the default shard by its restore; the old cluster's other annotations (its
// own restore source, settings) are not carried.
func TestRestoreReplacementKeepsShardAndLabels(t *testing.T) {
	const shardKey = "example.com/shard"
	srv, store := fixture.MinIOStore(t, restoreBucket)
	ctx := context.Background()
	if _, err := store.Put(ctx, "c/good.db", bytes.NewReader(etcdtest.Snapshot(t, 5)), backup.PutOptions{Metadata: map[string]string{"etcd-version": "3.6.16"}}); err != nil {
		t.Fatal(err)
	}
	aws := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	labels := map[string]string{"etcd.database.coreos.com/shard": "b", "team": "payments"}
	prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-old-prod",
		Finalizers: []string{"test/hold"}, Labels: labels,
		Annotations: map[string]string{
			shardKey:                                "b",
			etcdv1beta2.ScopeAnnotation:             etcdv1beta2.ScopeClusterWide,
			render.AnnotationRestore:                `{"restore":"an-old-one"}`,
			etcdv1beta2.QuotaBackendBytesAnnotation: "1073741824",
		}}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	er := fixture.S3Restore("rollback", "prod", restoreBucket+"/c/good.db")
	er.Spec.S3.Endpoint = srv.Endpoint()
	er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
	f := newRestoreFixture(t, aws, prod, er)
	f.r.ShardKey = shardKey

	f.reconcile(t, "rollback")
	f.wantCondition(t, "rollback", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "deleting EtcdCluster prod")
	var old etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &old); err != nil {
		t.Fatal(err)
	}
	old.Finalizers = nil // the garbage collector's part
	if err := f.c.Update(ctx, &old); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "rollback")
	f.wantCondition(t, "rollback", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "deleted the earlier EtcdCluster prod")
	var c etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &c); err != nil {
		t.Fatalf("new cluster: %v", err)
	}
	if c.UID == prod.UID {
		t.Fatal("the old cluster is still there")
	}
	if !maps.Equal(c.Labels, labels) {
		t.Errorf("new cluster's labels %v; want the replaced one's %v", c.Labels, labels)
	}
	if c.Annotations[shardKey] != "b" || c.Annotations[etcdv1beta2.ScopeAnnotation] != etcdv1beta2.ScopeClusterWide {
		t.Errorf("new cluster's annotations %v; want the shard key's and the scope carried", c.Annotations)
	}
	if src, err := render.Restore(&c); err != nil || src == nil || src.Restore != "rollback" {
		t.Errorf("new cluster's restore source %+v, %v: want this restore's, not the old cluster's", src, err)
	}
	if _, ok := c.Annotations[etcdv1beta2.QuotaBackendBytesAnnotation]; ok {
		t.Errorf("a setting annotation of the old cluster was carried: %v", c.Annotations)
	}
}

// goodBackupStore is a MinIO bucket holding c/good.db, a snapshot of 5 keys taken from
// etcd 3.6.16, and the aws Secret that reaches it.
func goodBackupStore(t *testing.T) (*miniotest.Server, *corev1.Secret) {
	t.Helper()
	srv, store := fixture.MinIOStore(t, restoreBucket)
	if _, err := store.Put(context.Background(), "c/good.db", bytes.NewReader(etcdtest.Snapshot(t, 5)), backup.PutOptions{Metadata: map[string]string{"etcd-version": "3.6.16"}}); err != nil {
		t.Fatal(err)
	}
	return srv, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: fixture.AWSSecretData(srv)}
}
