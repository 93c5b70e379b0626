package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

func defaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "x"}
}

// TestUpgradeBackupIntoOwnClaim: no EtcdBackup names the cluster, a default StorageClass
// exists: before 3.6 → 3.7 the operator creates a claim of its own, sized from the
// largest database, and the one-shot EtcdBackup into it (PVC storage, the step's path),
// both controlled by the cluster and labelled; no member moves until the backup holds
// the snapshot, a failed one refuses the step, and the record names the claim.
func TestUpgradeBackupIntoOwnClaim(t *testing.T) {
	s := fixture.Scheme()
	cluster := upgradingCluster(4)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass(),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Provisioner: "y"}).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}, &etcdv1beta2.EtcdBackup{}).WithInterceptorFuncs(withUIDs(interceptor.Funcs{})).Build()
	rec := record.NewFakeRecorder(50)
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	r := newTestClusterReconciler(t, c, rec, func() time.Time { return now })
	ctx := context.Background()
	d := desiredFromSpec(cluster, r.MinQuorumLossGrace)
	seen := upgradingObserved(now)
	seen.Members[1].DBSize = 2 << 30 // the largest: 2 GiB + 1 GiB + 128 MiB → 4 GiB
	plan := func() (planner.Action, *observation) {
		t.Helper()
		ub, eb, err := r.observeUpgradeBackup(ctx, cluster, seen)
		if err != nil {
			t.Fatal(err)
		}
		o := &observation{planner: seen, upgradeBackup: eb}
		o.planner.UpgradeBackup = ub
		return planner.Plan(d, o.planner), o
	}

	a := planTakeAndAct(ctx, t, r, cluster, plan)
	if a.ClaimBytes != 4<<30 {
		t.Fatalf("first action %s, want TakeUpgradeBackup into a 4 GiB claim", a)
	}
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: a.Name}, &pvc); err != nil {
		t.Fatalf("claim %s: %v", a.Name, err)
	}
	if !metav1.IsControlledBy(&pvc, cluster) || pvc.Labels[etcdv1beta2.UpgradeBackupOfLabel] != "up" ||
		pvc.Labels[render.LabelApp] != render.AppOperatorPod || pvc.Labels[render.LabelCluster] != "" {
		t.Errorf("claim owners %v labels %v: want the cluster's, labelled the operator's, no member label", pvc.OwnerReferences, pvc.Labels)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("4Gi")) != 0 ||
		pvc.Spec.StorageClassName != nil || !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim spec %+v: want 4Gi ReadWriteOnce on the default class", pvc.Spec)
	}
	var eb etcdv1beta2.EtcdBackup
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: a.Name}, &eb); err != nil {
		t.Fatalf("one-shot backup %s: %v", a.Name, err)
	}
	if eb.Spec.StorageType != etcdv1beta2.BackupStorageTypePVC || eb.Spec.PVC == nil || eb.Spec.PVC.ClaimName != pvc.Name ||
		eb.Spec.PVC.Path != "up.before-3.7.3-"+upgradeBackupID(cluster) || eb.Spec.S3 != nil || eb.Spec.BackupPolicy == nil ||
		eb.Spec.BackupPolicy.TimeoutInSecond != claimBackupTimeout(4<<30) || eb.Spec.BackupPolicy.MaxBackups != 0 {
		t.Errorf("one-shot spec %+v (pvc %+v): want PVC storage on the claim, the step's path, one-shot, a timeout for 4 GiB", eb.Spec, eb.Spec.PVC)
	}
	// What the operator created is recorded by the UIDs its creates returned.
	if got := createdRecord(cluster, a.Name); got == nil || got.ClaimUID != string(pvc.UID) || got.BackupUID != string(eb.UID) || pvc.UID == "" || eb.UID == "" {
		t.Errorf("status.upgradeBackup.created %+v, want %s by the claim's uid %q and the backup's %q", cluster.Status.UpgradeBackup, a.Name, pvc.UID, eb.UID)
	}
	if !metav1.IsControlledBy(&eb, cluster) || eb.Labels[etcdv1beta2.UpgradeBackupUIDLabel] != "uid-up" {
		t.Errorf("one-shot owners %v labels %v", eb.OwnerReferences, eb.Labels)
	}

	// Acted again (a retried reconcile): the claim is the cluster's, nothing new.
	if err := r.takeClaimBackup(ctx, cluster, nil, a); err != nil {
		t.Errorf("a second take: %v", err)
	}
	if a, _ := plan(); a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonUpgradeBackupPending {
		t.Fatalf("while the backup runs: %s %s, want Wait(UpgradeBackupPending)", a, a.Reason)
	}

	// The backup pod failed (a full claim, say): the step is refused, saying why.
	const why = "backup pod up-before-backup failed (exit code 1): write /backup/x: no space left on device"
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded,
		Status: metav1.ConditionFalse, Reason: etcdv1beta2.ReasonBackupPodFailed, Message: why, ObservedGeneration: eb.Generation})
	if err := c.Status().Update(ctx, &eb); err != nil {
		t.Fatal(err)
	}
	a2, o := plan()
	if a2.Kind != planner.Wait || a2.Reason != etcdv1beta2.ReasonUpgradeBackupFailed || !strings.Contains(a2.Message, "no space left") {
		t.Fatalf("after the failed backup: %s %s %q, want Wait(UpgradeBackupFailed) with its reason", a2, a2.Reason, a2.Message)
	}
	// Started over, it must not be retried into the same claim: the advice names both.
	if !strings.Contains(a2.Message, "delete EtcdBackup "+eb.Name+" and its claim "+pvc.Name) {
		t.Errorf("failed backup message %q: want it to say to delete the EtcdBackup and its claim", a2.Message)
	}
	if up := planner.Summarize(d, o.planner, a2).Conditions[3]; up.Status || up.Reason != etcdv1beta2.ReasonUpgradeBackupFailed {
		t.Errorf("Upgrading condition %+v", up)
	}

	// Its claim deleted by someone: the backup can never finish; the step is refused,
	// saying how to start over. The claim back: the backup's own state again.
	if err := c.Delete(ctx, &pvc); err != nil {
		t.Fatal(err)
	}
	if a, _ := plan(); a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonUpgradeBackupFailed || !strings.Contains(a.Message, "is gone") {
		t.Fatalf("the claim gone: %s %s %q, want Wait(UpgradeBackupFailed) saying so", a, a.Reason, a.Message)
	}
	pvc.ResourceVersion = ""
	if err := c.Create(ctx, &pvc); err != nil {
		t.Fatal(err)
	}

	// Retried and taken: the first follower moves; the record names the claim.
	taken := metav1.NewTime(now.Add(-time.Minute))
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded,
		Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded, Message: "ok", ObservedGeneration: eb.Generation})
	eb.Status = etcdv1beta2.EtcdBackupStatus{Succeeded: true, EtcdVersion: "3.6.16", EtcdRevision: 50, LastSuccessDate: taken, Conditions: eb.Status.Conditions}
	if err := c.Status().Update(ctx, &eb); err != nil {
		t.Fatal(err)
	}
	a3, o := plan()
	if a3.Kind != planner.UpgradeMember || a3.StepBackup == nil || a3.StepBackup.Backup != eb.Name {
		t.Fatalf("after the backup: %s (%+v), want UpgradeMember naming %s", a3, a3.StepBackup, eb.Name)
	}
	r.recordUpgradeBackup(cluster, o, &plannedStep{action: a3, ran: true})
	if got := cluster.Status.UpgradeBackup; got == nil || got.Backup != eb.Name || got.Claim != pvc.Name || got.Key != eb.Spec.PVC.Path ||
		got.Revision != 50 || got.FromVersion != "3.6.16" || got.Skipped != "" || len(got.Created) != 1 || got.Created[0].BackupUID != string(eb.UID) {
		t.Errorf("status.upgradeBackup %+v, want the backup, its claim and path, what was created still listed", got)
	}
}

// TestUpgradeBackupClaimNotTheClusters: a claim of the step's name that the cluster does
// not control is never backed up into: the planner is told (a claim in the cache), and
// the act refuses one it only meets on create.
func TestUpgradeBackupClaimNotTheClusters(t *testing.T) {
	s := fixture.Scheme()
	cluster := upgradingCluster(0)
	name := upgradeBackupName(cluster, "3.7.3")
	foreign := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass(), foreign).Build()
	now := time.Now()
	r := newTestClusterReconciler(t, c, record.NewFakeRecorder(10), func() time.Time { return now })
	ctx := context.Background()
	ub, _, err := r.observeUpgradeBackup(ctx, cluster, upgradingObserved(now))
	if err != nil || ub.Claim == nil || !ub.Claim.Foreign {
		t.Fatalf("observed %+v (%v), want the claim seen as foreign", ub, err)
	}
	o := upgradingObserved(now)
	o.UpgradeBackup = ub
	if a := planner.Plan(desiredFromSpec(cluster, r.MinQuorumLossGrace), o); a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonUpgradeBackupFailed {
		t.Errorf("%s %s, want Wait(UpgradeBackupFailed)", a, a.Reason)
	}
	err = r.takeClaimBackup(ctx, cluster, nil, planner.Action{Kind: planner.TakeUpgradeBackup, Name: name, Version: "3.7.3", ClaimBytes: 1 << 30})
	if err == nil || !strings.Contains(err.Error(), "not the one the operator created") {
		t.Errorf("take into a foreign claim: %v", err)
	}
	var eb etcdv1beta2.EtcdBackup
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &eb); !apierrors.IsNotFound(err) {
		t.Errorf("an EtcdBackup into the foreign claim was created (%v)", err)
	}
	// A cluster at its version looks at no claim (and reads no StorageClass).
	steady := cluster.DeepCopy()
	steady.Spec.Version = "3.6.16"
	if ub, _, err := r.observeUpgradeBackup(ctx, steady, clusterAt(now, "3.6.16")); err != nil || ub.Claim != nil {
		t.Errorf("at its version: %+v (%v), want no claim view", ub, err)
	}
}

// TestUpgradeBackupForgedEtcdBackupRefused: no EtcdBackup names the cluster, and a
// tenant created an EtcdBackup of the step's predictable name first, with the
// operator's labels, an owner reference to the cluster and the step's path, writing to a
// claim of its own, and marked it succeeded. It is not the operator's (the operator
// records the UID of the one it creates), so the step is refused, naming it, and it is
// neither used nor deleted. The same holds once the operator recorded creating another
// of that name (a UID that differs).
func TestUpgradeBackupForgedEtcdBackupRefused(t *testing.T) {
	s := fixture.Scheme()
	cluster := upgradingCluster(4)
	name := upgradeBackupName(cluster, "3.7.3")
	forged := claimBackupFor(cluster, name, "3.7.3", 1<<30)
	forged.UID = "uid-tenants"
	forged.Spec.PVC.ClaimName = "tenants-claim"
	if err := controllerutil.SetControllerReference(cluster, forged, s); err != nil {
		t.Fatal(err)
	}
	forged.Status = etcdv1beta2.EtcdBackupStatus{Succeeded: true, LastSuccessDate: metav1.Now(), Conditions: []metav1.Condition{{
		Type: etcdv1beta2.BackupConditionSucceeded, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded, LastTransitionTime: metav1.Now()}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass(), forged).Build()
	now := time.Now()
	r := newTestClusterReconciler(t, c, record.NewFakeRecorder(10), func() time.Time { return now })
	ctx := context.Background()
	d := desiredFromSpec(cluster, r.MinQuorumLossGrace)
	for _, tc := range []struct {
		name    string
		created []etcdv1beta2.UpgradeBackupCreated
		want    string
	}{
		{"nothing recorded", nil, "the operator did not create it"},
		{"another recorded", []etcdv1beta2.UpgradeBackupCreated{{Name: name, ClaimUID: "uid-c", BackupUID: "uid-operators"}}, "not the one the operator created"},
		{"its UID recorded, another claim", []etcdv1beta2.UpgradeBackupCreated{{Name: name, ClaimUID: "uid-c", BackupUID: "uid-tenants"}}, "not the one the operator created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := cluster.DeepCopy()
			if tc.created != nil {
				cl.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{Created: tc.created}
			}
			ub, eb, err := r.observeUpgradeBackup(ctx, cl, upgradingObserved(now))
			if err != nil {
				t.Fatal(err)
			}
			if ub.State != planner.UpgradeBackupFailed || !strings.Contains(ub.Message, tc.want) || !strings.Contains(ub.Message, name) || eb != nil {
				t.Fatalf("observed %+v (backup %v), want Failed naming %s: %q", ub, eb != nil, name, tc.want)
			}
			o := upgradingObserved(now)
			o.UpgradeBackup = ub
			a := planner.Plan(d, o)
			if a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonUpgradeBackupFailed || !strings.Contains(a.Message, name) {
				t.Errorf("%s %s %q, want Wait(UpgradeBackupFailed) naming it", a, a.Reason, a.Message)
			}
			if up := planner.Summarize(d, o, a).Conditions[3]; up.Status || up.Reason != etcdv1beta2.ReasonUpgradeBackupFailed || !strings.Contains(up.Message, name) {
				t.Errorf("Upgrading condition %+v", up)
			}
		})
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(forged), &etcdv1beta2.EtcdBackup{}); err != nil {
		t.Errorf("the tenant's EtcdBackup: %v, want it left alone", err)
	}
}

// TestUpgradeBackupClaimReuse: an existing claim of the step's name is backed up into
// only if it is the one the operator created (its recorded UID, controlled, labelled) and
// large enough; a smaller one is grown where its StorageClass allows, and otherwise the
// step is refused, saying to delete it. One with the cluster's owner reference and
// labels but another UID (forged) is refused.
func TestUpgradeBackupClaimReuse(t *testing.T) {
	s := fixture.Scheme()
	expand, fixed := true, false
	classes := []client.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "grows"}, Provisioner: "x", AllowVolumeExpansion: &expand},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: "x", AllowVolumeExpansion: &fixed},
	}
	now := time.Now()
	seen := upgradingObserved(now)
	seen.Members[0].DBSize = 2 << 30 // needs 4 GiB
	for _, tc := range []struct {
		name     string
		class    string
		size     string
		uid      types.UID
		labels   bool
		wantKind planner.Kind
		wantMsg  string // of the Wait, or of the act's error
		grownTo  string
	}{
		{"ours, large enough", "fixed", "4Gi", "uid-claim", true, planner.TakeUpgradeBackup, "", "4Gi"},
		{"ours, too small, the class expands: grown", "grows", "1Gi", "uid-claim", true, planner.TakeUpgradeBackup, "", "4Gi"},
		{"ours, too small, the class cannot expand: refused", "fixed", "1Gi", "uid-claim", true, planner.Wait, "delete the claim", "1Gi"},
		{"forged: the owner and labels, another UID", "fixed", "8Gi", "uid-forged", true, planner.Wait, "not this cluster's", "8Gi"},
		{"ours, its labels changed", "fixed", "8Gi", "uid-claim", false, planner.Wait, "not this cluster's", "8Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := upgradingCluster(4)
			name := upgradeBackupName(cluster, "3.7.3")
			cluster.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{Created: []etcdv1beta2.UpgradeBackupCreated{{Name: name, ClaimUID: "uid-claim"}}}
			pvc := backupClaimFor(cluster, name, 1)
			pvc.UID = tc.uid
			pvc.Spec.StorageClassName = &tc.class
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(tc.size)
			if !tc.labels {
				pvc.Labels = map[string]string{render.LabelApp: render.AppOperatorPod}
			}
			if err := controllerutil.SetControllerReference(cluster, pvc, s); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(append(classes, cluster, pvc)...).
				WithInterceptorFuncs(withUIDs(interceptor.Funcs{})).Build()
			r := newTestClusterReconciler(t, c, record.NewFakeRecorder(10), func() time.Time { return now })
			ctx := context.Background()
			ub, _, err := r.observeUpgradeBackup(ctx, cluster, seen)
			if err != nil {
				t.Fatal(err)
			}
			o := seen
			o.UpgradeBackup = ub
			a := planner.Plan(desiredFromSpec(cluster, r.MinQuorumLossGrace), o)
			if a.Kind != tc.wantKind || !strings.Contains(a.Message, tc.wantMsg) {
				t.Fatalf("%s %q (claim view %+v), want %s %q", a, a.Message, ub.Claim, tc.wantKind, tc.wantMsg)
			}
			// The act checks again whatever was planned: only ours is backed up into.
			act := planner.Action{Kind: planner.TakeUpgradeBackup, Name: name, Version: "3.7.3", ClaimBytes: 4 << 30}
			err = r.takeClaimBackup(ctx, cluster, nil, act)
			ours := tc.uid == "uid-claim" && tc.labels
			if ours != (err == nil) {
				t.Errorf("take: %v, want it to succeed only into the operator's claim", err)
			}
			var got corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), &got); err != nil {
				t.Fatal(err)
			}
			if q := got.Spec.Resources.Requests[corev1.ResourceStorage]; tc.wantKind == planner.TakeUpgradeBackup && q.Cmp(resource.MustParse(tc.grownTo)) != 0 {
				t.Errorf("claim requests %s, want %s", q.String(), tc.grownTo)
			}
			err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &etcdv1beta2.EtcdBackup{})
			if ours != (err == nil) {
				t.Errorf("EtcdBackup into it: %v, want one only into the operator's claim", err)
			}
		})
	}
}

// TestUpgradeBackupClaimReadFresh: the operator's cache holds only claims labelled as
// its own, so the claim fallback reads the claim from the API server. A tenant's
// unlabelled claim of the predicted name is seen (and refused), and the operator's own
// claim with its labels stripped is not taken as gone under its running backup.
func TestUpgradeBackupClaimReadFresh(t *testing.T) {
	s := fixture.Scheme()
	cluster := upgradingCluster(4)
	name := upgradeBackupName(cluster, "3.7.3")
	tenants := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-tenants"}}
	now := time.Now()
	// The cache: what the operator's informers hold (no unlabelled claim); the API server
	// holds it too.
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass()).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass(), tenants).Build()
	r := newTestClusterReconciler(t, cache, record.NewFakeRecorder(10), func() time.Time { return now })
	r.APIReader = api
	ctx := context.Background()
	ub, _, err := r.observeUpgradeBackup(ctx, cluster, upgradingObserved(now))
	if err != nil || ub.Claim == nil || !ub.Claim.Foreign {
		t.Fatalf("observed %+v (%v), want the tenant's claim seen, as not the cluster's", ub, err)
	}

	// The operator's claim and backup, the claim's labels since stripped: the cache
	// shows the backup but not the claim; the backup is still running, not failed.
	own := backupClaimFor(cluster, name, 1<<30)
	own.UID, own.Labels = "uid-claim", nil
	eb := claimBackupFor(cluster, name, "3.7.3", 1<<30)
	eb.UID = "uid-backup"
	for _, o := range []client.Object{own, eb} {
		if err := controllerutil.SetControllerReference(cluster, o, s); err != nil {
			t.Fatal(err)
		}
	}
	cluster.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{Created: []etcdv1beta2.UpgradeBackupCreated{{Name: name, ClaimUID: "uid-claim", BackupUID: "uid-backup"}}}
	r.Client = fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass(), eb.DeepCopy()).Build()
	r.APIReader = fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, defaultStorageClass(), eb.DeepCopy(), own).Build()
	ub, _, err = r.observeUpgradeBackup(ctx, cluster, upgradingObserved(now))
	if err != nil || ub.State != planner.UpgradeBackupRunning {
		t.Errorf("observed %+v (%v), want the backup running, its claim not gone", ub, err)
	}
}

// TestClaimBackupTimeout: the one-shot backup into a claim gets time for its size (the
// default 60 s would cut a large snapshot off), bounded.
func TestClaimBackupTimeout(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		want  int64
	}{{0, 60}, {1 << 30, 60 + 52}, {4 << 30, 60 + 205}, {32 << 30, 60 + 1639}, {1 << 40, 3600}, {-1, 60}} {
		if got := claimBackupTimeout(tc.bytes); got != tc.want {
			t.Errorf("claimBackupTimeout(%d) = %d, want %d", tc.bytes, got, tc.want)
		}
	}
	if got := claimBackupFor(&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "up"}}, "n", "3.7.3", 8<<30).Spec.BackupPolicy; got == nil || got.TimeoutInSecond != claimBackupTimeout(8<<30) {
		t.Errorf("one-shot policy %+v, want the timeout for 8 GiB", got)
	}
}

// clusterAt is upgradingObserved with every member and pod on version.
func clusterAt(now time.Time, version string) planner.Observed {
	o := upgradingObserved(now)
	for i := range o.Members {
		o.Members[i].Version, o.Pods[i].Version = version, version
	}
	return o
}

// TestKeptClaimBackups: the current step's own and the recorded snapshot stay, or while
// none is recorded the newest taken; nothing else.
func TestKeptClaimBackups(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	all := []claimBackup{{"a", t0}, {"b", t0.Add(time.Hour)}, {"c", time.Time{}}, {"d", t0.Add(-time.Hour)}}
	for _, tc := range []struct {
		name, recorded, current string
		backups                 []claimBackup
		want                    []string
	}{
		{"recorded and current", "a", "c", all, []string{"a", "c"}},
		{"recorded is current", "b", "b", all, []string{"b"}},
		{"none recorded: the newest taken stays", "", "c", all, []string{"b", "c"}},
		{"none recorded, none taken: only the current", "", "x", []claimBackup{{"c", time.Time{}}}, []string{"x"}},
		{"none at all", "", "x", nil, []string{"x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep := keptClaimBackups(tc.recorded, tc.current, tc.backups)
			var got []string
			for n := range keep {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPruneClaimBackups: once a newer claim snapshot is recorded, the older claim and
// EtcdBackup the operator recorded creating are deleted, each by its recorded UID. Left
// alone: a claim of the label and the one-shot shape that the cluster controls but the
// operator never recorded creating (an owner reference is anyone's to write), a recorded
// name not of the one-shot shape, a claim an EtcdRestore the cluster does not own reads,
// a member's claim carrying the label, and an EtcdBackup to a target. A recorded claim
// whose labels were stripped is still found and deleted. Status is written through the
// status subresource, as the API server requires.
func TestPruneClaimBackups(t *testing.T) {
	s := fixture.Scheme()
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "up", Namespace: "default", UID: "uid-up", Generation: 7},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"},
	}
	newest := upgradeBackupName(cluster, "3.6.16")
	const (
		older    = "up-before-3.7.3-0000abcd"
		forged   = "up-before-3.5.36-ffff0000" // controlled and labelled, never recorded
		notShape = "up-data"                   // recorded, but not a one-shot name
		read     = "up-before-3.7.3-2222bbbb"  // an EtcdRestore reads its claim
		stripped = "up-before-3.7.3-3333cccc"  // its claim's labels removed
	)
	own := func(obj client.Object) client.Object {
		if err := controllerutil.SetControllerReference(cluster, obj, s); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	claim := func(name string, labels map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels,
			UID: types.UID("uid-claim-" + name)}}
	}
	backup := func(name, version string) *etcdv1beta2.EtcdBackup {
		eb := claimBackupFor(cluster, name, version, 1<<30)
		eb.UID = types.UID("uid-backup-" + name)
		return eb
	}
	ours := func() map[string]string {
		l := upgradeBackupLabels(cluster)
		l[render.LabelApp] = render.AppOperatorPod
		return l
	}
	created := func(names ...string) []etcdv1beta2.UpgradeBackupCreated {
		var out []etcdv1beta2.UpgradeBackupCreated
		for _, n := range names {
			out = append(out, etcdv1beta2.UpgradeBackupCreated{Name: n, ClaimUID: "uid-claim-" + n, BackupUID: "uid-backup-" + n})
		}
		return out
	}
	cluster.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{Version: "3.6.16", Backup: newest, Claim: newest,
		Created: created(newest, older, notShape, read, stripped)}
	member := render.ClusterLabels("up")
	member[etcdv1beta2.UpgradeBackupOfLabel] = "up" // labelled by someone: still a member's
	restore := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "default"},
		Spec: etcdv1beta2.EtcdRestoreSpec{RestoreSource: etcdv1beta2.RestoreSource{PVC: &etcdv1beta2.PVCBackupSource{ClaimName: read, Path: "x"}}}}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&etcdv1beta2.EtcdCluster{}, &etcdv1beta2.EtcdBackup{}).
		WithObjects(cluster,
			own(claim(newest, ours())), own(backup(newest, "3.6.16")),
			own(claim(older, ours())), own(backup(older, "3.7.3")),
			own(claim(forged, ours())), own(backup(forged, "3.5.36")),
			own(claim(notShape, ours())), own(backup(notShape, "3.7.3")),
			own(claim(read, ours())), own(backup(read, "3.7.3")), restore,
			own(claim(stripped, nil)), own(backup(stripped, "3.7.3")),
			own(claim("up-0001", member)),
			upgradeBackupFor(cluster, &etcdv1beta2.EtcdBackup{Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3,
				BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "b/p"}}}}, "up-before-3.7.3-s3", "3.7.3"),
		).Build()
	rec := record.NewFakeRecorder(10)
	r := newTestClusterReconciler(t, c, rec, time.Now)
	ctx := context.Background()
	r.pruneClaimBackups(ctx, cluster)

	left := func() (cl, bl []string) {
		t.Helper()
		var claims corev1.PersistentVolumeClaimList
		var backups etcdv1beta2.EtcdBackupList
		listAll(ctx, t, c, &claims, &backups) // controller_invalidspec_test.go
		for _, p := range claims.Items {
			cl = append(cl, p.Name)
		}
		for _, b := range backups.Items {
			bl = append(bl, b.Name)
		}
		slices.Sort(cl)
		slices.Sort(bl)
		return cl, bl
	}
	sorted := func(objs ...string) []string { slices.Sort(objs); return objs }
	cl, bl := left()
	if want := sorted(newest, forged, notShape, read, "up-0001"); !slices.Equal(cl, want) {
		t.Errorf("claims left %v, want %v", cl, want)
	}
	if want := sorted(newest, forged, notShape, "up-before-3.7.3-s3"); !slices.Equal(bl, want) {
		t.Errorf("EtcdBackups left %v, want %v", bl, want)
	}
	var recs []string
	for _, r := range cluster.Status.UpgradeBackup.Created {
		recs = append(recs, r.Name)
	}
	if want := []string{newest, notShape, read}; !slices.Equal(recs, want) {
		t.Errorf("still recorded %v, want %v (what is gone dropped, what stays kept)", recs, want)
	}
	if evs := drain(rec); len(evs) != 2 || !strings.Contains(evs[0], etcdv1beta2.EventReasonUpgradeBackupPruned) || !strings.Contains(evs[0], older) ||
		!strings.Contains(evs[1], stripped) {
		t.Errorf("events %q, want one per pruned claim", evs)
	}
	// The record written as the operator writes status: through the subresource.
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}

	// Nothing recorded on a claim (a later step skipped its backup) and the spec moved on:
	// the newest snapshot taken stays, an unfinished older attempt goes.
	var nb etcdv1beta2.EtcdBackup
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: newest}, &nb); err != nil {
		t.Fatal(err)
	}
	nb.Status = etcdv1beta2.EtcdBackupStatus{Succeeded: true, LastSuccessDate: metav1.Now()}
	if err := c.Status().Update(ctx, &nb); err != nil {
		t.Fatal(err)
	}
	const abandoned = "up-before-3.7.3-1111aaaa"
	for _, obj := range []client.Object{own(claim(abandoned, ours())), own(backup(abandoned, "3.7.3"))} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cluster.Generation++
	cluster.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{Version: "3.7.3", Skipped: etcdv1beta2.ReasonUpgradeBackupSkipped,
		Created: append(cluster.Status.UpgradeBackup.Created, created(abandoned)...)}
	r.pruneClaimBackups(ctx, cluster)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: newest}, &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("the newest snapshot's claim was deleted: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: abandoned}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the abandoned attempt's claim stays (%v)", err)
	}
}

// TestPruneClaimBackupsPastAFailure: one EtcdBackup that cannot be deleted keeps its own
// claim (its backup may still write to it) and stops nothing else.
func TestPruneClaimBackupsPastAFailure(t *testing.T) {
	s := fixture.Scheme()
	cluster := upgradingCluster(2)
	const stuck, other = "up-before-3.6.16-0000aaaa", "up-before-3.6.16-0000bbbb"
	var objs []client.Object
	cluster.Status.UpgradeBackup = &etcdv1beta2.UpgradeBackupStatus{}
	for _, n := range []string{stuck, other} {
		pvc := backupClaimFor(cluster, n, 1<<30)
		pvc.UID = types.UID("uid-claim-" + n)
		eb := claimBackupFor(cluster, n, "3.6.16", 1<<30)
		eb.UID = types.UID("uid-backup-" + n)
		for _, o := range []client.Object{pvc, eb} {
			if err := controllerutil.SetControllerReference(cluster, o, s); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, o)
		}
		cluster.Status.UpgradeBackup.Created = append(cluster.Status.UpgradeBackup.Created,
			etcdv1beta2.UpgradeBackupCreated{Name: n, ClaimUID: string(pvc.UID), BackupUID: string(eb.UID)})
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, cluster)...).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*etcdv1beta2.EtcdBackup); ok && obj.GetName() == stuck {
				return apierrors.NewInternalError(fmt.Errorf("etcdserver: request timed out"))
			}
			return cl.Delete(ctx, obj, opts...)
		}}).Build()
	r := newTestClusterReconciler(t, c, record.NewFakeRecorder(10), time.Now)
	ctx := context.Background()
	r.pruneClaimBackups(ctx, cluster)
	for _, tc := range []struct {
		obj  client.Object
		name string
		stay bool
	}{
		{&etcdv1beta2.EtcdBackup{}, stuck, true}, {&corev1.PersistentVolumeClaim{}, stuck, true},
		{&etcdv1beta2.EtcdBackup{}, other, false}, {&corev1.PersistentVolumeClaim{}, other, false},
	} {
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.name}, tc.obj)
		if tc.stay && err != nil || !tc.stay && !apierrors.IsNotFound(err) {
			t.Errorf("%T %s: %v, want it to stay: %v", tc.obj, tc.name, err, tc.stay)
		}
	}
	if got := cluster.Status.UpgradeBackup.Created; len(got) != 1 || got[0].Name != stuck {
		t.Errorf("recorded %+v, want only %s left to retry", got, stuck)
	}
}
