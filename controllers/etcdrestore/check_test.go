//go:build integration

package etcdrestore

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/snapshotcheck"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// A replacement checks its backup in a bounded pod of the operator's image, never in the
// operator: a pod that is evicted or overruns its deadline, and a report whose SHA-256 is
// not the object's as the operator reads it, each fail the restore with a reason and
// delete nothing. A passed check pins the object (key and SHA-256 on the EtcdRestore)
// before the old cluster is deleted, and the new cluster restores exactly that object,
// whatever is written to the prefix afterwards.
func TestRestoreReplaceChecksInAPodAndPins(t *testing.T) {
	srv, store := fixture.MinIOStore(t, restoreBucket)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	put := func(key string, keys int) backup.Object {
		t.Helper()
		obj, err := store.Put(ctx, key, bytes.NewReader(etcdtest.Snapshot(t, keys)), backup.PutOptions{Metadata: map[string]string{"etcd-version": "3.6.16"}})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	first := put(backup.PeriodicKey("c/per", 10, t0), 3)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: "default"}, Data: map[string][]byte{
		"credentials": []byte(srv.AWSCredentialsFile()), "config": []byte(srv.AWSConfigFile())}}
	prod := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "default", UID: "uid-prod"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3}}
	er := fixture.S3Restore("r", "prod", restoreBucket+"/c/per")
	er.Spec.S3.Endpoint = srv.Endpoint()
	er.Annotations = map[string]string{ReplaceExistingClusterAnnotation: "true"}
	f := newRestoreFixture(t, secret, prod, er)
	f.r.S3Access.MaxObjectBytes = 1 << 30
	podKey := client.ObjectKey{Namespace: "default", Name: "r-check"}
	checkPod := func() *corev1.Pod {
		t.Helper()
		var p corev1.Pod
		if err := f.c.Get(ctx, podKey, &p); err != nil {
			t.Fatalf("check pod: %v", err)
		}
		return &p
	}
	noPod := func() {
		t.Helper()
		var p corev1.Pod
		if err := f.c.Get(ctx, podKey, &p); err == nil {
			t.Errorf("check pod %s left behind", p.Name)
		}
	}
	prodUntouched := func(step string) {
		t.Helper()
		var c etcdv1beta2.EtcdCluster
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &c); err != nil || c.UID != "uid-prod" || !c.DeletionTimestamp.IsZero() {
			t.Fatalf("%s: prod was touched: %+v, %v", step, c.ObjectMeta, err)
		}
		if _, ok := f.restore(t, "r").Annotations[CheckedObjectAnnotation]; ok {
			t.Fatalf("%s: an object was recorded as verified", step)
		}
	}

	// The pod: the operator's image, bounded, tokenless, restricted, the restore's own.
	res := f.reconcileOnce(t, "r")
	f.wantCondition(t, "r", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "is not touched until then")
	p := checkPod()
	c := p.Spec.Containers[0]
	if c.Image != "op:test" || !strings.Contains(strings.Join(c.Args, " "), "verify snapshot --s3-path="+restoreBucket+"/"+first.Key) {
		t.Errorf("check container %s %v", c.Image, c.Args)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit: %+v", r, c.Resources)
		}
	}
	if want := resource.MustParse("1Gi"); c.Resources.Limits.StorageEphemeral().Cmp(want) < 0 {
		t.Errorf("ephemeral-storage limit %v below the largest backup", c.Resources.Limits.StorageEphemeral())
	}
	if p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds <= 0 || p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken ||
		p.Spec.SecurityContext == nil || p.Spec.SecurityContext.RunAsNonRoot == nil || !*p.Spec.SecurityContext.RunAsNonRoot ||
		c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("check pod not bounded or not restricted: %+v", p.Spec)
	}
	if !metav1.IsControlledBy(p, f.restore(t, "r")) {
		t.Errorf("check pod not controlled by the restore: %v", p.OwnerReferences)
	}
	// The manager's pod cache holds only the operator's own pods, by label: the
	// controller wakes on this pod only if it is among them.
	if !render.OwnedSelector().Matches(labels.Set(p.Labels)) {
		t.Errorf("check pod labels %v are outside the operator's pod cache (%s)", p.Labels, render.OwnedSelector())
	}
	if res.RequeueAfter < time.Duration(*p.Spec.ActiveDeadlineSeconds)*time.Second {
		t.Errorf("requeued after %v, before the pod's deadline", res.RequeueAfter)
	}
	if reqs := f.r.restoreOfPod(ctx, p); len(reqs) != 1 || reqs[0].Name != "r" {
		t.Errorf("check pod maps to %v", reqs)
	}
	prodUntouched("pod running")
	// refused: the next reconcile fails the restore with reason, naming mention, deletes
	// nothing and leaves no check pod.
	refused := func(reason, mention, when string) {
		t.Helper()
		f.reconcileOnce(t, "r")
		f.wantCondition(t, "r", metav1.ConditionFalse, reason, mention)
		prodUntouched(when)
		noPod()
	}

	// Evicted before it reported.
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: ephemeral-storage."
	if err := f.c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	refused(etcdv1beta2.ReasonVerificationFailed, "Evicted: The node was low on resource", "evicted")

	// Past its deadline without a report. While the retry's pod runs, the failure stands.
	f.reconcileOnce(t, "r")
	f.wantCondition(t, "r", metav1.ConditionFalse, etcdv1beta2.ReasonVerificationFailed, "Evicted")
	p = checkPod()
	p.Annotations[snapshotcheck.AnnotationStarted] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if err := f.c.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	refused(etcdv1beta2.ReasonVerificationFailed, "did not finish in time", "deadline")

	// The object is replaced between the pod's check and the operator's own read (or the
	// report is forged): the SHA-256s differ.
	f.reconcileOnce(t, "r")
	if f.runCheckPods(t) != 1 {
		t.Fatal("no check pod ran")
	}
	put(first.Key, 4)
	refused(etcdv1beta2.ReasonChecksumMismatch, "changed between the two reads", "object replaced")

	// A passed check: pinned on the restore before the delete.
	first = put(first.Key, 5)
	f.reconcile(t, "r")
	f.wantCondition(t, "r", metav1.ConditionUnknown, etcdv1beta2.ReasonReplacingCluster, "deleting EtcdCluster prod (uid uid-prod")
	var v checkedSnapshot
	if err := json.Unmarshal([]byte(f.restore(t, "r").Annotations[CheckedObjectAnnotation]), &v); err != nil ||
		v.Key != first.Key || v.SHA256 != first.SHA256 || v.Bucket != restoreBucket || v.Generation != 1 {
		t.Fatalf("verified object %+v (%v), want %s sha256 %s", v, err, first.Key, first.SHA256)
	}
	noPod()

	// A newer periodic backup and a replaced object after the check change nothing: the
	// new cluster restores the recorded object, pinned to the recorded SHA-256, so
	// replaced bytes fail the members' restore step instead of restoring other data.
	put(backup.PeriodicKey("c/per", 20, t0.Add(time.Minute)), 6)
	put(first.Key, 7)
	f.reconcile(t, "r")
	var nc etcdv1beta2.EtcdCluster
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(prod), &nc); err != nil {
		t.Fatal(err)
	}
	src, err := render.Restore(&nc)
	if err != nil || src == nil || src.S3.Path != restoreBucket+"/"+first.Key || src.SHA256 != first.SHA256 {
		t.Fatalf("new cluster restores %+v (%v), want %s pinned to %s", src, err, first.Key, first.SHA256)
	}
	f.wantCondition(t, "r", metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, "sha256 "+first.SHA256)
	noPod()
}
