//go:build integration

package etcdcluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupselect"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/etcdtest"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// runCheckPods plays the kubelet for the snapshot check pods that have not run.
func (f *proofFixture) runCheckPods(t *testing.T) int {
	t.Helper()
	return fixture.RunSnapshotCheckPods(t, f.c, f.r.S3Access, f.r.OperatorImage)
}

// actChecked acts, running the snapshot check pods the step starts, until it starts none.
func (f *proofFixture) actChecked(t *testing.T, o *observation, a planner.Action) ctrl.Result {
	t.Helper()
	for range 10 {
		res, err := f.r.act(context.Background(), f.cluster, o, a)
		if err != nil {
			t.Fatal(err)
		}
		if f.runCheckPods(t) == 0 {
			return res
		}
	}
	t.Fatal("snapshot check pods keep being started")
	return ctrl.Result{}
}

// chooseChecked chooses, running the snapshot check pods the choice starts.
func (f *proofFixture) chooseChecked(t *testing.T) (*etcdv1beta2.BackupRestoreStatus, error) {
	t.Helper()
	for range 10 {
		rec, err := f.r.chooseBackup(context.Background(), f.cluster)
		if _, pending := errors.AsType[*backupCheckPending](err); !pending {
			return rec, err
		}
		if f.runCheckPods(t) == 0 {
			t.Fatalf("choice pending without a check pod to run: %v", err)
		}
	}
	t.Fatal("snapshot check pods keep being started")
	return nil, nil
}

// A total-loss restore checks its candidates in a snapshot check pod of the operator's
// image, never in its own process, and takes a passed check only when the object's
// SHA-256, as the operator reads it itself, is the one the pod reported: an object
// replaced between the two reads (or a forged report) is passed over; a pod that dies
// without a result is too; the older candidate that passes is recorded, pinned to its
// SHA-256.
func TestTotalLossChecksCandidatesInAPod(t *testing.T) {
	store, secret, endpoint := lossStore(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	md := map[string]string{backupselect.MetaBackupNamespace: "ns", backupselect.MetaBackupName: "b"}
	put := func(key string, keys int) backup.Object {
		t.Helper()
		obj, err := store.Put(ctx, key, bytes.NewReader(etcdtest.Snapshot(t, keys)), backup.PutOptions{Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	oldest, older, newest := backup.PeriodicKey("c/per", 10, at), backup.PeriodicKey("c/per", 20, at.Add(time.Hour)), backup.PeriodicKey("c/per", 30, at.Add(2*time.Hour))
	good := put(oldest, 1)
	put(older, 2)
	put(newest, 3)
	f := newProofFixture(t, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationAllowRestoreFromBackup: "true"}
		c.Status.Bootstrapped = true
	}, secret, s3Backup("b", "c", lossBucket+"/c/per", endpoint))
	podKey := client.ObjectKey{Namespace: "ns", Name: render.SnapshotCheckPodName("c", backupCheckSuffix)}
	pending := func(step string) *corev1.Pod {
		t.Helper()
		_, err := f.r.chooseBackup(ctx, f.cluster)
		if _, ok := errors.AsType[*backupCheckPending](err); !ok {
			t.Fatalf("%s: choice %v, want a check pod running", step, err)
		}
		var p corev1.Pod
		if err := f.c.Get(ctx, podKey, &p); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if c := p.Spec.Containers[0]; c.Image != f.r.OperatorImage || c.Resources.Limits.StorageEphemeral().IsZero() || !metav1.IsControlledBy(&p, f.cluster) {
			t.Fatalf("%s: check pod %s %v %+v %v", step, c.Image, c.Args, c.Resources, p.OwnerReferences)
		}
		return &p
	}

	// The newest: the object is replaced after the pod checked it.
	p := pending("newest")
	if !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--s3-path="+lossBucket+"/"+newest) {
		t.Fatalf("first check is not of the newest: %v", p.Spec.Containers[0].Args)
	}
	if f.runCheckPods(t) != 1 {
		t.Fatal("no check pod ran")
	}
	put(newest, 4)
	// The next older: its pod dies without a result.
	p = pending("older")
	if !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--s3-path="+lossBucket+"/"+older) {
		t.Fatalf("second check is not of the older one: %v", p.Spec.Containers[0].Args)
	}
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: render.SnapshotCheckContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 2, Reason: "Error", Message: "unexpected fault address 0x7f1bf45ff000\nfatal error: fault"}}}}
	if err := f.c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	rec, err := f.chooseChecked(t)
	if err != nil || rec.Path != lossBucket+"/"+oldest || rec.SHA256 != good.SHA256 {
		t.Fatalf("chose %+v (%v), want %s pinned to %s", rec, err, oldest, good.SHA256)
	}
	var left corev1.Pod
	if err := f.c.Get(ctx, podKey, &left); err == nil {
		t.Errorf("check pod left behind")
	}
	// What was passed over, and why, is on record for the next failed choice's message.
	for path, want := range map[string]string{newest: "changed between the two reads", older: "without a result"} {
		done, ok := f.r.lostBackups.checks.get(clusterKey(f.cluster)+"/"+string(f.cluster.UID), lossBucket+"/"+path)
		if !ok || done.err == nil || !strings.Contains(done.err.Error(), want) {
			t.Errorf("%s: check %+v, want a failure saying %q", path, done, want)
		}
	}
}
