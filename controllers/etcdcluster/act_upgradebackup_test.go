package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/test/fixture"
)

// upgradingCluster is the cluster "up" of three members running 3.6.16, its spec at
// generation gen asking for 3.7.3: the upgrade the upgrade-backup tests step through.
func upgradingCluster(gen int64) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "up", Namespace: "default", UID: "uid-up", Generation: gen},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"},
		Status:     etcdv1beta2.EtcdClusterStatus{CurrentVersion: "3.6.16"},
	}
}

// planTakeAndAct plans once, wants TakeUpgradeBackup (no backup taken yet), and
// executes it.
func planTakeAndAct(ctx context.Context, t *testing.T, r *Reconciler, cluster *etcdv1beta2.EtcdCluster, plan func() (planner.Action, *observation)) planner.Action {
	t.Helper()
	a, o := plan()
	if a.Kind != planner.TakeUpgradeBackup {
		t.Fatalf("first action %s, want TakeUpgradeBackup", a)
	}
	if _, err := r.act(ctx, cluster, o, a); err != nil {
		t.Fatal(err)
	}
	return a
}

// upgradingObserved is a healthy three-member cluster on 3.6.16 led by member 1, its
// spec on 3.7.3 (created on 3.6: no snapshot wait).
func upgradingObserved(now time.Time) planner.Observed {
	o := planner.Observed{Now: now, Bootstrapped: true, MembersKnown: true, LeaderID: 1, NameSeed: "uid-up",
		VersionSince: &planner.VersionSince{Minor: "3.6"}}
	for i, name := range []string{"up-0000", "up-0001", "up-0002"} {
		id := uint64(i + 1)
		o.Members = append(o.Members, planner.Member{ID: id, Name: name, PeerURLs: []string{"http://" + name + ":2380"},
			Reachable: true, RaftIndex: 100, Revision: 50, Version: "3.6.16", StorageVersion: "3.6.0"})
		o.Pods = append(o.Pods, planner.Pod{Name: name, MemberID: id, Phase: planner.PodRunning, Ready: true,
			Version: "3.6.16", CreatedAt: now.Add(-time.Hour), EtcdRunning: true})
	}
	return o
}

// TestUpgradeBackupRefusesStepWhenBackupFails: the configured target's store cannot be
// reached, so the one-shot backup before 3.6 → 3.7 failed (its status as the backup
// controller writes it): the step is refused with the backup's reason in the Upgrading
// condition, and no member is moved. The one-shot backup was created from the target
// (its path suffixed, labelled, not owned by the cluster), and once it succeeds the
// first follower moves and status.upgradeBackup records the snapshot.
func TestUpgradeBackupRefusesStepWhenBackupFails(t *testing.T) {
	s := fixture.Scheme()
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "up", Namespace: "default", UID: "uid-up"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"},
	}
	target := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default",
			Annotations: map[string]string{etcdv1beta2.BackupCompressionAnnotation: "gzip",
				etcdv1beta2.BackupScheduleAnnotation: "@daily"}},
		Spec: etcdv1beta2.EtcdBackupSpec{
			ClusterRef:   &etcdv1beta2.EtcdClusterRef{Name: "up"},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupPolicy: &etcdv1beta2.BackupPolicy{MaxBackups: 3, TimeoutInSecond: 30},
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{
				Path: "bucket/up/nightly", AWSSecret: "aws", Endpoint: "http://192.0.2.1:9000", ForcePathStyle: true}},
		},
	}
	other := &etcdv1beta2.EtcdBackup{ // names another cluster: never the target
		ObjectMeta: metav1.ObjectMeta{Name: "a-other", Namespace: "default"},
		Spec: etcdv1beta2.EtcdBackupSpec{ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "someone-else"},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "bucket/other"}}},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, target, other).
		WithStatusSubresource(&etcdv1beta2.EtcdCluster{}, &etcdv1beta2.EtcdBackup{}).Build()
	rec := record.NewFakeRecorder(50)
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	r := newTestClusterReconciler(t, c, rec, func() time.Time { return now })
	ctx := context.Background()
	d := desiredFromSpec(cluster, r.MinQuorumLossGrace)

	plan := func() (planner.Action, *observation) {
		t.Helper()
		ub, eb, err := r.observeUpgradeBackup(ctx, cluster, upgradingObserved(now))
		if err != nil {
			t.Fatal(err)
		}
		o := &observation{planner: upgradingObserved(now), upgradeBackup: eb}
		o.planner.UpgradeBackup = ub
		return planner.Plan(d, o.planner), o
	}

	// 1. No backup yet: TakeUpgradeBackup, executed.
	a := planTakeAndAct(ctx, t, r, cluster, plan)
	var eb etcdv1beta2.EtcdBackup
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: a.Name}, &eb); err != nil {
		t.Fatalf("one-shot backup %s: %v", a.Name, err)
	}
	if !strings.HasPrefix(eb.Name, "up-before-3.7.3-") {
		t.Errorf("one-shot backup named %s", eb.Name)
	}
	if eb.Spec.S3 == nil || eb.Spec.S3.Path != "bucket/up/nightly.before-3.7.3-"+upgradeBackupID(cluster) || eb.Spec.S3.AWSSecret != "aws" || eb.Spec.S3.Endpoint != target.Spec.S3.Endpoint {
		t.Errorf("one-shot storage %+v, want the target's with the path suffixed", eb.Spec.S3)
	}
	if eb.Spec.ClusterRef == nil || eb.Spec.ClusterRef.Name != "up" || eb.Spec.BackupPolicy == nil ||
		eb.Spec.BackupPolicy.MaxBackups != 0 || eb.Spec.BackupPolicy.BackupIntervalInSecond != 0 || eb.Spec.BackupPolicy.TimeoutInSecond != 30 {
		t.Errorf("one-shot spec %+v (policy %+v): want clusterRef up, one-shot, no retention, the target's timeout", eb.Spec, eb.Spec.BackupPolicy)
	}
	if _, sched := eb.Annotations[etcdv1beta2.BackupScheduleAnnotation]; sched || eb.Annotations[etcdv1beta2.BackupCompressionAnnotation] != "gzip" {
		t.Errorf("one-shot annotations %v: want the target's compression, no schedule", eb.Annotations)
	}
	if len(eb.OwnerReferences) != 0 || eb.Labels[etcdv1beta2.UpgradeBackupOfLabel] != "up" || eb.Labels[etcdv1beta2.UpgradeBackupUIDLabel] != "uid-up" {
		t.Errorf("one-shot owners %v labels %v: want none, labelled with the cluster and its UID", eb.OwnerReferences, eb.Labels)
	}

	// 2. Running: wait, nothing moves.
	if a, _ := plan(); a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonUpgradeBackupPending {
		t.Fatalf("while the backup runs: %s %s, want Wait(UpgradeBackupPending)", a, a.Reason)
	}

	// 3. The store is unreachable: the backup failed; the step is refused.
	const why = `put bucket/up/nightly.before-3.7.3: dial tcp 192.0.2.1:9000: connect: connection refused`
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded,
		Status: metav1.ConditionFalse, Reason: etcdv1beta2.ReasonStorageError, Message: why, ObservedGeneration: eb.Generation})
	eb.Status.Succeeded, eb.Status.Reason = false, why
	if err := c.Status().Update(ctx, &eb); err != nil {
		t.Fatal(err)
	}
	a, o := plan()
	if a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonUpgradeBackupFailed || !strings.Contains(a.Message, "connection refused") {
		t.Fatalf("after the failed backup: %s %s %q, want Wait(UpgradeBackupFailed) with its reason", a, a.Reason, a.Message)
	}
	sum := planner.Summarize(d, o.planner, a)
	up := sum.Conditions[3]
	if up.Type != etcdv1beta2.ClusterConditionUpgrading || up.Status || up.Reason != etcdv1beta2.ReasonUpgradeBackupFailed || !strings.Contains(up.Message, "connection refused") {
		t.Errorf("Upgrading condition %+v, want False UpgradeBackupFailed naming the failure", up)
	}
	if _, err := r.act(ctx, cluster, o, a); err != nil {
		t.Fatal(err)
	}
	// Nothing was moved: no pod was created or changed (the fake holds none), no
	// further backup was created.
	var backups etcdv1beta2.EtcdBackupList
	if err := c.List(ctx, &backups); err != nil || len(backups.Items) != 3 {
		t.Errorf("%d EtcdBackups (%v), want the target, the other and one one-shot", len(backups.Items), err)
	}

	// 4. The retry succeeded: the first follower moves, and status records the backup.
	taken := metav1.NewTime(now.Add(-time.Minute))
	meta.SetStatusCondition(&eb.Status.Conditions, metav1.Condition{Type: etcdv1beta2.BackupConditionSucceeded,
		Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonBackupSucceeded, Message: "ok", ObservedGeneration: eb.Generation})
	eb.Status = etcdv1beta2.EtcdBackupStatus{Succeeded: true, EtcdVersion: "3.6.16", EtcdRevision: 50, LastSuccessDate: taken,
		Conditions: eb.Status.Conditions, Backups: []etcdv1beta2.StoredBackup{{Key: "up/nightly.before-3.7.3", Revision: 50, Time: taken}}}
	if err := c.Status().Update(ctx, &eb); err != nil {
		t.Fatal(err)
	}
	a, o = plan()
	if a.Kind != planner.UpgradeMember || a.ID != 2 || a.StepBackup == nil || a.StepBackup.Backup != eb.Name {
		t.Fatalf("after the backup: %s (step backup %+v), want UpgradeMember of member 2 naming %s", a, a.StepBackup, eb.Name)
	}
	o.planned = &plannedStep{action: a, ran: true}
	r.recordUpgradeBackup(cluster, o, o.planned)
	got := cluster.Status.UpgradeBackup
	if got == nil || got.Backup != eb.Name || got.Version != "3.7.3" || got.FromVersion != "3.6.16" || got.Revision != 50 ||
		got.Key != "up/nightly.before-3.7.3" || got.Time == nil || !got.Time.Equal(&taken) || got.Skipped != "" {
		t.Errorf("status.upgradeBackup %+v", got)
	}
}

// TestUpgradeBackupNotTheOperators: an EtcdBackup of the one-shot's name that the
// operator did not create for this cluster (another incarnation's, or a user's) is never
// taken as the step's backup.
func TestUpgradeBackupNotTheOperators(t *testing.T) {
	s := fixture.Scheme()
	cluster := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "up", Namespace: "default", UID: "uid-new"},
		Spec:       etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.7.3"},
	}
	name := upgradeBackupName(cluster, "3.7.3")
	stale := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{
			etcdv1beta2.UpgradeBackupOfLabel: "up", etcdv1beta2.UpgradeBackupUIDLabel: "uid-old"}},
		Spec: etcdv1beta2.EtcdBackupSpec{ClusterRef: &etcdv1beta2.EtcdClusterRef{Name: "up"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3BackupSource{Path: "bucket/x"}}},
		Status: etcdv1beta2.EtcdBackupStatus{Succeeded: true, Conditions: []metav1.Condition{{Type: etcdv1beta2.BackupConditionSucceeded,
			Status: metav1.ConditionTrue, Reason: "BackupSucceeded", LastTransitionTime: metav1.Now()}}},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster, stale).Build()
	r := newTestClusterReconciler(t, c, record.NewFakeRecorder(10), time.Now)
	ub, eb, err := r.observeUpgradeBackup(context.Background(), cluster, planner.Observed{})
	if err != nil {
		t.Fatal(err)
	}
	if ub.State != planner.UpgradeBackupFailed || !strings.Contains(ub.Message, "the operator did not create it") || eb != nil {
		t.Errorf("observed %+v (%v), want Failed naming the foreign backup", ub, eb)
	}
	if other := upgradeBackupName(&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "up", UID: "uid-old"}}, "3.7.3"); other == name {
		t.Errorf("two incarnations share the backup name %s", name)
	}
	// A later attempt at the same step (the spec changed since: a downgrade and the same
	// upgrade again, or a reverted version re-applied) names a new backup and path.
	later := cluster.DeepCopy()
	later.Generation++
	if upgradeBackupName(later, "3.7.3") == name || upgradeBackupSuffix(later, "3.7.3") == upgradeBackupSuffix(cluster, "3.7.3") {
		t.Errorf("a later attempt reuses the backup name %s or its path", name)
	}
	// Labels are anyone's to write: the operator's labels on a backup of another cluster,
	// or of another path, are not this step's backup.
	forged := stale.DeepCopy()
	forged.Labels[etcdv1beta2.UpgradeBackupUIDLabel] = "uid-new"
	forged.Spec.S3.Path = "bucket/x" + upgradeBackupSuffix(cluster, "3.7.3")
	forged.Spec.ClusterRef.Name = "another"
	if isUpgradeBackupOf(forged, cluster, "3.7.3") {
		t.Error("a backup of another cluster with this step's name and labels was taken as its backup")
	}
	forged.Spec.ClusterRef.Name = "up"
	if !isUpgradeBackupOf(forged, cluster, "3.7.3") {
		t.Error("the operator's own one-shot backup was not recognised")
	}
	forged.Spec.S3.Path = "bucket/elsewhere"
	if isUpgradeBackupOf(forged, cluster, "3.7.3") {
		t.Error("a backup to another path with this step's name and labels was taken as its backup")
	}
	long := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 63), UID: "u"}}
	if n := upgradeBackupName(long, "3.7.3"); len(n) > 63 || !strings.Contains(n, "-before-3.7.3-") {
		t.Errorf("name %q (%d characters)", n, len(n))
	}
	// No target and no one-shot: nothing to take, the planner decides by the mode.
	if err := c.Delete(context.Background(), stale); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	ub, _, err = r.observeUpgradeBackup(context.Background(), cluster, planner.Observed{})
	if err != nil || ub.Target != "" || ub.State != planner.UpgradeBackupAbsent {
		t.Errorf("without a target: %+v (%v)", ub, err)
	}
}

// TestUpgradeBackupNoTarget: without a target and without a default StorageClass for the
// claim fallback (upgrade-backup auto) the first follower moves, and status.upgradeBackup
// says no backup was taken (NoBackupStorage), with a warning event, once. With
// upgrade-backup required the step waits instead, naming both.
func TestUpgradeBackupNoTarget(t *testing.T) {
	s := fixture.Scheme()
	cluster := upgradingCluster(0)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cluster).Build()
	rec := record.NewFakeRecorder(10)
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	r := newTestClusterReconciler(t, c, rec, func() time.Time { return now })
	ctx := context.Background()
	ub, eb, err := r.observeUpgradeBackup(ctx, cluster, upgradingObserved(now))
	if err != nil {
		t.Fatal(err)
	}
	o := &observation{planner: upgradingObserved(now), upgradeBackup: eb}
	o.planner.UpgradeBackup = ub
	a := planner.Plan(desiredFromSpec(cluster, r.MinQuorumLossGrace), o.planner)
	if a.Kind != planner.UpgradeMember || a.StepBackup == nil || a.StepBackup.Skipped != etcdv1beta2.ReasonNoBackupStorage {
		t.Fatalf("without a target or a default StorageClass: %s (%+v), want UpgradeMember saying NoBackupStorage", a, a.StepBackup)
	}
	for range 2 {
		r.recordUpgradeBackup(cluster, o, &plannedStep{action: a, ran: true})
	}
	if got := cluster.Status.UpgradeBackup; got == nil || got.Skipped != etcdv1beta2.ReasonNoBackupStorage || got.Version != "3.7.3" || got.FromVersion != "3.6.16" || got.Backup != "" {
		t.Errorf("status.upgradeBackup %+v", got)
	}
	if evs := drain(rec); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+etcdv1beta2.ReasonNoBackupStorage) || !strings.Contains(evs[0], "StorageClass") {
		t.Errorf("events %q, want one NoBackupStorage warning", evs)
	}

	// A downgrade's first move is enabling etcd's downgrade (its action names only the
	// minor): recorded under the spec's version all the same.
	down := cluster.DeepCopy()
	down.Spec.Version, down.Status.CurrentVersion, down.Status.UpgradeBackup = "3.5.36", "3.6.16", nil
	r.recordUpgradeBackup(down, o, &plannedStep{ran: true, action: planner.Action{Kind: planner.EnableDowngrade, Version: "3.5",
		StepBackup: &planner.StepBackup{Skipped: etcdv1beta2.ReasonNoBackupStorage}}})
	if got := down.Status.UpgradeBackup; got == nil || got.Version != "3.5.36" || got.FromVersion != "3.6.16" || got.Skipped != etcdv1beta2.ReasonNoBackupStorage {
		t.Errorf("status.upgradeBackup after enabling the downgrade %+v", got)
	}
	if evs := drain(rec); len(evs) != 1 || !strings.Contains(evs[0], "3.5.36 without a backup") {
		t.Errorf("events %q, want one warning for the downgrade", evs)
	}

	required := cluster.DeepCopy()
	required.Annotations = map[string]string{etcdv1beta2.UpgradeBackupAnnotation: etcdv1beta2.UpgradeBackupRequired}
	if a := planner.Plan(desiredFromSpec(required, r.MinQuorumLossGrace), o.planner); a.Kind != planner.Wait || a.Reason != etcdv1beta2.ReasonNoBackupStorage {
		t.Errorf("required without a target: %s %s, want Wait(NoBackupStorage)", a, a.Reason)
	} else if sum := planner.Summarize(desiredFromSpec(required, r.MinQuorumLossGrace), o.planner, a); sum.Conditions[3].Status ||
		sum.Conditions[3].Reason != etcdv1beta2.ReasonNoBackupStorage || !strings.Contains(sum.Conditions[3].Message, "StorageClass") {
		t.Errorf("Upgrading condition %+v, want False NoBackupStorage naming the StorageClass", sum.Conditions[3])
	}
	bogus := cluster.DeepCopy()
	bogus.Annotations = map[string]string{etcdv1beta2.UpgradeBackupAnnotation: "maybe"}
	if m, warning := upgradeBackupMode(bogus); m != planner.UpgradeBackupAuto || !strings.Contains(warning, "maybe") {
		t.Errorf("an unknown value: mode %q, warning %q", m, warning)
	}
}
